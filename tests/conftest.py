"""Shared fixtures: Orbchain's own tests use the kit plugin authors use (``orbchain.testing``).

Every database-backed test runs on SQLite and on PostgreSQL; PostgreSQL
runs when ``ORBCHAIN_TEST_PG_DSN`` names a server (``make test`` sets it),
see ``orbchain/testing/databases.py``. Under CI a missing DSN is an error,
never a silent skip.
"""

from __future__ import annotations

import os

import pytest

# tests.telegram_support: the telegram tests' ``standin`` fixture (the Bot API stand-in), shared by three modules.
pytest_plugins = ["orbchain.testing", "tests.telegram_support"]


PG_ENV = "ORBCHAIN_TEST_PG_DSN"  # orbchain.testing.PG_ENV; not imported here, so the plugin's asserts are rewritten


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("CI") and not os.environ.get(PG_ENV):
        raise pytest.UsageError(f"CI run without {PG_ENV}: PostgreSQL tests would not run (use `make test`)")
