"""The fast tier (``make test-fast``, tests/unit): its guard fails what is not a unit test, and ``make test`` still runs it.

The guard is tests/unit/conftest.py; this module lives outside tests/unit because it starts processes
and opens sockets to prove the guard refuses them. See docs/decisions.md "A fast test tier".
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.unit.conftest import UnitTierViolation, install_guard

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
UNIT = ROOT / "tests" / "unit"

OFFENDERS = '''
import socket
import subprocess

import pytest


@pytest.fixture
def client():
    return object()


def test_starts_a_process():
    subprocess.run(["true"], check=True)


def test_opens_a_socket():
    socket.create_connection(("127.0.0.1", 9), timeout=1)


def test_listens():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))


def test_uses_the_app(client):
    pass


@pytest.mark.postgresql_only("two processes on one database")
def test_needs_postgresql():
    pass


def test_swallows_the_refusal():
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    except Exception:
        pass


def test_is_a_unit_test():
    assert sum([1, 2]) == 3
'''


def test_the_guard_refuses_processes_and_network_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    install_guard(monkeypatch, allowed=set())
    with pytest.raises(UnitTierViolation, match="start a process"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    with pytest.raises(UnitTierViolation, match="network connection"):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    with pytest.raises(UnitTierViolation, match="listen"), socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
    left, right = socket.socketpair()  # the event loop's own wake-up pair stays allowed
    left.close()
    right.close()


def test_the_guard_lets_the_test_database_through(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``make test`` the unit modules also run on PostgreSQL: that one address stays reachable."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        address = server.getsockname()
        install_guard(monkeypatch, allowed={address})
        socket.create_connection(address, timeout=5).close()


def test_a_unit_test_that_is_not_one_fails(pytester: pytest.Pytester) -> None:
    """End to end: tests/unit/conftest.py in a tier of its own fails each kind of offender and passes the rest."""
    pytester.makepyfile(conftest=(UNIT / "conftest.py").read_text(encoding="utf-8"), test_offenders=OFFENDERS)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n"
                     "markers =\n    postgresql_only: PostgreSQL alone\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:schemathesis")
    result.assert_outcomes(passed=1, failed=4, errors=2)
    for reason in ("may not start a process", "may not open a network connection", "may not listen on a network socket",
                   "app/server fixture(s) client", "is marked postgresql_only", "caught by the code under test"):
        result.stdout.fnmatch_lines([f"*{reason}*"])


def test_make_test_still_runs_the_unit_tier() -> None:
    """``make test`` runs scripts/run_tests.py with no paths, so pytest's testpaths decide; tests/unit is inside."""
    recipe = re.search(r"^test: .*?\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    assert recipe and "scripts/run_tests.py $(PYTEST_ARGS)" in recipe.group(1)
    assert '"-m", "pytest", *argv' in (ROOT / "scripts" / "run_tests.py").read_text(encoding="utf-8")
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert options["testpaths"] == ["tests"]
    assert "--ignore" not in options.get("addopts", "") and "unit" not in str(options.get("norecursedirs", ""))
    assert (UNIT / "__init__.py").is_file()


def test_pytest_collects_every_unit_module_from_the_default_paths() -> None:
    """Collected as ``make test`` collects (no path arguments), every tests/unit module is there."""
    modules = sorted(p.relative_to(ROOT).as_posix() for p in UNIT.glob("test_*.py"))
    assert len(modules) >= 25, modules
    found = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "--ignore-glob=tests/test_*.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**{k: v for k, v in os.environ.items() if k != "CI"}, "ORBCHAIN_TEST_SQLITE_ONLY": "1"})
    assert found.returncode == 0, found.stdout[-2000:] + found.stderr[-2000:]
    collected = {line.split("::")[0] for line in found.stdout.splitlines() if "::" in line}
    assert set(modules) <= collected, sorted(set(modules) - collected)
