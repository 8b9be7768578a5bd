"""A green run says which databases it used, and never drops PostgreSQL unasked (issue 35, item 1).

Each case runs pytest in a subprocess on a throwaway test module that loads
``orbchain.testing`` the way a plugin author's conftest does. Its tests take
only ``db_backend`` (no database is opened), so the DSN may point nowhere.

Breaks caught: ``backends()`` falling back to SQLite alone without a word
(the run would exit 0 with no DSN and no opt-in); the summary line missing
or miscounting; ``postgresql_only`` tests running on SQLite, or vanishing
without a reason in a SQLite-only run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MODULE = '''
import pytest

def test_everywhere(db_backend):
    assert db_backend in ("sqlite", "postgresql")

@pytest.mark.postgresql_only("two processes share one database")
def test_cross_process(db_backend):
    assert db_backend == "postgresql"

def test_no_database():
    pass
'''
NOWHERE = "postgresql://nobody@127.0.0.1:1/never"


def run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["orbchain.testing"]\n')
    (tmp_path / "test_inner.py").write_text(MODULE)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ORBCHAIN_") and k != "CI"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env={**clean, **env})


def test_plain_pytest_without_a_dsn_refuses_to_run_database_tests(tmp_path):
    result = run(tmp_path)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
    assert "ORBCHAIN_TEST_PG_DSN is not set" in result.stderr and "ORBCHAIN_TEST_SQLITE_ONLY=1" in result.stderr
    assert "passed" not in result.stdout


def test_a_sqlite_only_run_asked_for_says_so_and_shows_what_it_skipped(tmp_path):
    """The opt-in also wins over a DSN left in the shell."""
    result = run(tmp_path, ORBCHAIN_TEST_PG_DSN=NOWHERE, ORBCHAIN_TEST_SQLITE_ONLY="1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "orbchain databases: sqlite 1 passed" in result.stdout
    assert "PostgreSQL did NOT run (ORBCHAIN_TEST_SQLITE_ONLY=1 asked for SQLite alone)" in result.stdout
    assert "PostgreSQL only (two processes share one database)" in result.stdout
    assert "2 passed, 1 skipped" in result.stdout


def test_with_a_dsn_both_run_and_postgresql_only_tests_run_there_alone(tmp_path):
    result = run(tmp_path, ORBCHAIN_TEST_PG_DSN=NOWHERE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "orbchain databases: sqlite 1 passed; postgresql 2 passed" in result.stdout
    assert "did NOT run" not in result.stdout and "4 passed" in result.stdout
