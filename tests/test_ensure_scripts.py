"""scripts/ensure_debian_package.sh, which ``make test`` runs first for Chromium, litecoind, monerod ...

Run for real (``sh``) with a PATH whose ``apt-get`` and ``sudo`` are stubs in
a temporary folder: the stub records each call and does what the case
needs (install the command, install nothing, answer "Could not get lock"
while another apt holds it). Nothing is installed on the machine. What the
issue found (43, item 5): the version check was piped into ``head``, so in
``sh`` (no pipefail) it could never fail, and apt failed the whole run at
once when another process held its lock.
"""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "ensure_debian_package.sh"
TOOL = "orbchain-ensure-probe-tool"  # a command no machine has

# apt-get as the case wants it: log argv; `update` says "locked" while $STUB_DIR/locked_updates counts down;
# `install` creates $TOOL when $STUB_INSTALLS is set (printing its version with $STUB_VERSION_STATUS).
APT_GET = """#!/bin/sh
echo "$*" >> "$STUB_DIR/apt.log"
for arg in "$@"; do
    case "$arg" in
        update)
            left=$(cat "$STUB_DIR/locked_updates" 2>/dev/null || echo 0)
            if [ "$left" -gt 0 ]; then
                echo $((left - 1)) > "$STUB_DIR/locked_updates"
                echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)" >&2
                exit 100
            fi
            if [ -n "${STUB_UPDATE_FAILS:-}" ]; then
                echo "E: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease" >&2
                exit 100
            fi
            exit 0 ;;
        install)
            if [ -n "${STUB_INSTALLS:-}" ]; then
                printf '#!/bin/sh\\necho "%s 1.2.3"\\necho "second line"\\n' "$STUB_TOOL" > "$STUB_DIR/$STUB_TOOL"
                chmod +x "$STUB_DIR/$STUB_TOOL"
            fi
            exit 0 ;;
    esac
done
exit 0
"""
SUDO = '#!/bin/sh\nexec "$@"\n'  # for a run as another user than root: the script then goes through sudo


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def stubs(tmp_path):
    _executable(tmp_path / "apt-get", APT_GET)
    _executable(tmp_path / "sudo", SUDO)
    return tmp_path


def ensure(stubs: Path, command: str = TOOL, **env: str) -> subprocess.CompletedProcess:
    """The script for ``command`` (package ``orbchain-probe``) with the stubs first on PATH."""
    environment = {"PATH": f"{stubs}:/usr/bin:/bin", "STUB_DIR": str(stubs), "STUB_TOOL": TOOL, **env}
    return subprocess.run(["sh", str(SCRIPT), command, "orbchain-probe"], capture_output=True, text=True,
                          env=environment, timeout=60)


def apt_calls(stubs: Path) -> list[str]:
    log = stubs / "apt.log"
    return log.read_text().splitlines() if log.exists() else []


def test_a_package_that_does_not_provide_the_command_fails(stubs):
    """Before: apt-get "succeeded", the check ``tool --version | head`` exited 0, and so did the script."""
    run = ensure(stubs)
    assert run.returncode != 0, run.stdout + run.stderr
    assert f"{TOOL} is still missing" in run.stderr
    assert [call.split()[-1] for call in apt_calls(stubs)] == ["-qq", "orbchain-probe"]  # update, then install


def test_a_command_that_does_not_run_fails(stubs):
    """Present but broken (a missing library, a wrong architecture): neither --version nor -version works."""
    _executable(stubs / TOOL, "#!/bin/sh\necho 'error while loading shared libraries' >&2\nexit 127\n")
    run = ensure(stubs)
    assert run.returncode != 0, run.stdout + run.stderr
    assert "does not run" in run.stderr and not apt_calls(stubs)


def test_an_installed_command_prints_its_first_version_line_and_calls_no_apt(stubs):
    _executable(stubs / TOOL, f"#!/bin/sh\necho '{TOOL} 9.9'\necho 'copyright line'\n")
    run = ensure(stubs)
    assert (run.returncode, run.stdout) == (0, f"{TOOL} 9.9\n"), run.stderr
    assert not apt_calls(stubs)


def test_a_command_known_by_its_single_dash_version_passes(stubs):
    """nginx answers ``-version`` (on stderr) and refuses ``--version``."""
    _executable(stubs / TOOL, '#!/bin/sh\n[ "$1" = -version ] || exit 1\necho "nginx version: 1.22" >&2\n')
    run = ensure(stubs)
    assert (run.returncode, run.stdout) == (0, "nginx version: 1.22\n"), run.stderr


def test_the_install_waits_for_apts_locks_instead_of_failing(stubs):
    """Another apt held the lists lock for two tries: the script waits, then installs (before: it failed)."""
    (stubs / "locked_updates").write_text("2")
    run = ensure(stubs, STUB_INSTALLS="1")
    assert (run.returncode, run.stdout) == (0, f"{TOOL} 1.2.3\n"), run.stderr
    calls = apt_calls(stubs)
    assert [call.split()[2] for call in calls] == ["update", "update", "update", "install"]
    # dpkg's own locks (lock-frontend, the "make test" failure) are waited for by apt-get itself.
    assert all(call.startswith("-o DPkg::Lock::Timeout=600 ") for call in calls), calls


def test_the_lock_wait_is_bounded(stubs):
    (stubs / "locked_updates").write_text("1000")
    run = ensure(stubs, STUB_INSTALLS="1", ORBCHAIN_APT_LOCK_SECONDS="0")
    assert run.returncode != 0 and "Could not get lock" in run.stderr
    assert len(apt_calls(stubs)) == 1


def test_any_other_apt_failure_fails_at_once(stubs):
    run = ensure(stubs, STUB_INSTALLS="1", STUB_UPDATE_FAILS="1")
    assert run.returncode != 0 and "Failed to fetch" in run.stderr
    assert len(apt_calls(stubs)) == 1 and not (stubs / TOOL).exists()

