"""Packaging keeps the design card's layout installable as ``orbchain.*``."""

from __future__ import annotations

import configparser
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP_LEVEL = ("core", "chains", "plugins", "web", "scheduler", "migrations")


def _declared_packages() -> set[str]:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    return {line.strip() for line in parser["options"]["packages"].splitlines() if line.strip()}


def test_layout_of_the_design_card():
    for name in (*TOP_LEVEL, "tests"):
        assert (ROOT / name).is_dir(), name
    for name in ("setup.cfg", "pyproject.toml", "README.md", "Makefile", ".ci/run"):
        assert (ROOT / name).is_file(), name


def test_every_package_directory_is_declared_in_setup_cfg():
    declared = _declared_packages()
    found = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "orbchain").rglob("__init__.py")}
    for top in TOP_LEVEL:
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT).parts
            found.add(".".join(("orbchain", *rel)))
    missing = found - declared
    assert not missing, f"add to setup.cfg [options] packages: {sorted(missing)}"


def test_every_data_folder_is_a_declared_package():
    """A folder of templates or static files left out of ``packages`` made setuptools warn on every install
    (19 warnings in `make run`, issue 32) and ships only through a parent's glob."""
    declared = _declared_packages()
    folders = set()
    for top in TOP_LEVEL:
        for folder in (ROOT / top).rglob("*"):
            rel = folder.relative_to(ROOT).parts
            if folder.is_dir() and "__pycache__" not in rel and not (folder / "__init__.py").exists():
                folders.add(".".join(("orbchain", *rel)))
    assert folders, "no data folder found: the walk is broken"
    missing = folders - declared
    assert not missing, f"add to setup.cfg [options] packages (and their files to package_data): {sorted(missing)}"


def test_package_data_names_only_declared_packages_own_files():
    """Each package_data glob stays in its package's own folder, so no file rides on a parent's glob."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    declared = _declared_packages()
    for package, globs in parser["options.package_data"].items():
        assert package in declared, package
        assert "/" not in globs, f"{package}: {globs}"


def test_builtins_are_entry_points_of_the_public_group():
    names = {ep.name for ep in entry_points(group="orbchain")}
    assert {"bitcoin", "evm", "tron", "solana", "monero", "lightning", "devnet", "prices"} <= names


def test_console_command_and_python_m_agree():
    out = subprocess.run([sys.executable, "-m", "orbchain", "--help"], capture_output=True, text=True, check=True)
    assert "serve" in out.stdout and "migrate" in out.stdout and "ledger" in out.stdout


def test_ci_runs_make_test_only():
    text = (ROOT / ".ci" / "run").read_text()
    commands = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert "make test" in commands
    assert not [c for c in commands if c not in ("make test",) and not c.startswith(("set ", "cd "))]
