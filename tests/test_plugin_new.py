"""``orbchain plugin new``: both kinds of package pass their own tests at once; bad names and taken folders are refused.

The generated packages are installed the way pip would install them (the
package on ``sys.path`` and a dist-info declaring the ``orbchain`` entry
point, as ``tests/support.install_entry_point_package`` does), since the
conformance suite finds a chain plugin through its entry point only. Their
suites run in subprocesses with this interpreter, both at once (two cores),
on the databases this run uses.
"""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
import tomllib
from pathlib import Path, PurePosixPath

import pytest
from packaging.specifiers import SpecifierSet

from orbchain import __version__
from orbchain.core.cli.commands import main
from orbchain.core.cli.plugin_scaffold import TEMPLATES, ScaffoldError, scaffold, supported_range
from orbchain.testing import PG_ENV, SQLITE_ONLY_ENV

from .support import install_entry_point_package

ROOT = Path(__file__).resolve().parent.parent
SUITE_SECONDS = 240  # each generated suite takes 10-30 s here; the cap only stops a hung run


def _install(site: Path, name: str) -> None:
    """The dist-info ``pip install`` would write; the package itself is found from its own folder."""
    install_entry_point_package(site, f"orbchain_{name}", name, {})  # no files: the package's folder is on the path


def _start_suite(root: Path, site: Path) -> subprocess.Popen[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(root)])
    if not env.get(PG_ENV):
        env[SQLITE_ONLY_ENV] = "1"
    return subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.slow  # two whole plugin suites (the conformance suite among them) in subprocesses
def test_both_kinds_pass_their_own_tests_at_once(tmp_path):
    runs = {}
    for name, kind in (("zed", "chain"), ("loyalty", "feature")):
        made = scaffold(name, kind, tmp_path)
        assert made.root == tmp_path / f"orbchain-{name}"
        source = (made.root / f"orbchain_{name}" / "__init__.py").read_text()
        assert f'ORBCHAIN_REQUIRES = "{supported_range()}"' in source
        imported = {line.split()[1] for path in made.root.rglob("orbchain_*/*.py")
                    for line in path.read_text().splitlines() if line.startswith(("import orbchain", "from orbchain"))}
        assert imported == {"orbchain.api"} | ({"orbchain.api.openapi"} if kind == "feature" else set()), imported
        project = tomllib.loads((made.root / "pyproject.toml").read_text())["project"]
        assert project["entry-points"]["orbchain"] == {name: f"orbchain_{name}"}
        assert project["dependencies"][0] == f"orbchain{supported_range()}"
        site = tmp_path / f"site-{name}"
        _install(site, name)
        runs[name] = _start_suite(made.root, site)
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select",
                           "E,W,F,B,UP", "--line-length", "120", str(tmp_path)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
    outputs = {name: run.communicate(timeout=SUITE_SECONDS)[0] for name, run in runs.items()}
    for name, run in runs.items():
        assert run.returncode == 0, f"orbchain-{name}'s own tests failed:\n{outputs[name]}"
    assert "7 passed, 2 skipped" in outputs["zed"], outputs["zed"]  # the conformance suite; no HISTORY or PUSH declared
    assert "3 passed" in outputs["loyalty"], outputs["loyalty"]


def test_the_declared_range_holds_the_running_release():
    assert __version__ in SpecifierSet(supported_range())
    assert supported_range("0.1.0") == ">=0.1,<0.2" and supported_range("2.3.1") == ">=2.3,<3"


@pytest.mark.parametrize("name", ["Loyalty", "my-plugin", "9lives", "a", "my__plugin", "trailing_", "class",
                                  "x" * 31, "devnet"])
def test_bad_or_taken_names_are_refused_with_exit_code_2(tmp_path, capsys, name):
    assert main(["plugin", "new", name, "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"orbchain: plugin name {name!r}") and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


def test_an_existing_folder_is_never_overwritten(tmp_path, capsys):
    assert main(["plugin", "new", "loyalty", "--dir", str(tmp_path)]) == 0
    assert "orbchain-loyalty/" in capsys.readouterr().out
    mine = tmp_path / "orbchain-loyalty" / "orbchain_loyalty" / "__init__.py"
    mine.write_text("# my work\n")
    assert main(["plugin", "new", "loyalty", "--kind", "chain", "--dir", str(tmp_path)]) == 2
    assert "exists and is not empty; nothing was written" in capsys.readouterr().err
    assert mine.read_text() == "# my work\n"
    assert not (tmp_path / "orbchain-loyalty" / "orbchain_loyalty" / "adapter.py").exists()

    (tmp_path / "orbchain-empty").mkdir()  # an empty folder (made by hand, or by git clone) is filled
    assert scaffold("empty", "chain", tmp_path).files
    with pytest.raises(ScaffoldError, match="kind 'library'"):
        scaffold("other", "library", tmp_path)


def test_every_template_ships_as_package_data():
    """An installed Orbchain (not only this checkout) has the templates: setup.cfg's patterns cover each file."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    package = scaffold.__module__.rpartition(".")[0]  # the package the templates ship in, wherever it lives
    package_data = parser["options.package_data"]
    packages = {line.strip() for line in parser["options"]["packages"].splitlines() if line.strip()}
    files = [path.relative_to(TEMPLATES.parent) for path in TEMPLATES.rglob("*") if path.is_file()]

    def shipped(relative: Path) -> bool:
        """Its folder is a declared package whose package_data patterns match its name (or the package's
        own patterns match its path below it)."""
        folder = ".".join((package, *relative.parent.parts))
        if folder in packages and folder in package_data:
            return any(PurePosixPath(relative.name).match(p.strip()) for p in package_data[folder].split(","))
        own = [p.strip() for p in package_data.get(package, "").split(",") if p.strip()]
        return any(PurePosixPath(relative.as_posix()).match(p) for p in own)

    assert files and [str(f) for f in files if not shipped(f)] == []
