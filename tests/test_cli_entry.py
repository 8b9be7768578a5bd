"""The ``orbchain`` console script: the core's commands plus the web layer's ``serve``."""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

import pytest

from orbchain import cli
from orbchain.core.cli import commands as core_cli

ROOT = Path(__file__).resolve().parent.parent


def test_the_console_script_is_orbchain_cli_main():
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    scripts = [line.strip() for line in setup["options.entry_points"]["console_scripts"].splitlines() if line.strip()]
    assert scripts == ["orbchain = orbchain.cli:main"]


def test_serve_comes_from_the_web_layer_and_is_listed_first(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["serve", "--help"])
    assert exit_.value.code == 0 and "--port" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        core_cli.main(["serve"])  # the core alone has no web server
    assert exit_.value.code == 2
    assert "invalid choice: 'serve'" in capsys.readouterr().err


def test_python_dash_m_orbchain_runs_the_same_command():
    done = subprocess.run([sys.executable, "-m", "orbchain", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "{serve,migrate,ledger,payments,config,keys,plugins,payouts" in done.stdout
