"""Every database-backed test runs on SQLite and PostgreSQL, or on SQLite alone when asked to.

``ORBCHAIN_TEST_PG_DSN`` names the PostgreSQL server (``make test`` sets
it). The run creates its own database there and drops it at the end, and
each test gets a fresh schema inside it, so no test sees another's rows.
A test asks for ``db_url`` (or anything built on it) and is parametrized
over ``db_backend`` by the plugin (``orbchain.testing``).

Why a run without a DSN fails instead of quietly running SQLite alone: a
green SQLite-only run looks like a green run, and PostgreSQL is where
concurrency, NOTIFY and advisory locks are real. A SQLite-only run is
asked for by name (``ORBCHAIN_TEST_SQLITE_ONLY=1``, ``make test-sqlite``),
and every run ends with a line saying which databases ran.

Tests marked ``@pytest.mark.postgresql_only(reason)`` (two processes on
one database, NOTIFY, advisory locks: what SQLite cannot stand for) run on
PostgreSQL alone; their id says ``[postgresql]`` and a SQLite-only run
reports them skipped with the reason.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path
from typing import Any, AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import pytest
import pytest_asyncio

PG_ENV = "ORBCHAIN_TEST_PG_DSN"
SQLITE_ONLY_ENV = "ORBCHAIN_TEST_SQLITE_ONLY"
POSTGRESQL_ONLY = "postgresql_only"  # the marker of tests that need a second process on one database


def sqlite_only_requested() -> bool:
    """The explicit opt-in: ``ORBCHAIN_TEST_SQLITE_ONLY=1`` (it wins over a DSN set in the shell)."""
    return os.environ.get(SQLITE_ONLY_ENV, "").strip() == "1"


def backends() -> list[str]:
    if sqlite_only_requested() or not os.environ.get(PG_ENV):
        return ["sqlite"]
    return ["sqlite", "postgresql"]


def missing_database_choice() -> str | None:
    """Why database tests may not run as configured, or None when PostgreSQL is named or SQLite-only asked for."""
    if os.environ.get(PG_ENV) or sqlite_only_requested():
        return None
    return (f"database tests collected but {PG_ENV} is not set: PostgreSQL would not run. "
            f"Use `make test` (finds or starts PostgreSQL), set {PG_ENV}=postgresql://..., "
            f"or ask for a SQLite-only run explicitly with {SQLITE_ONLY_ENV}=1 (`make test-sqlite`).")


def backend_params(marker: Any | None) -> list[Any]:
    """The ``db_backend`` values of one test: every backend, or PostgreSQL alone for a marked test."""
    if marker is None:
        return backends()
    reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
    assert reason, f"@pytest.mark.{POSTGRESQL_ONLY} needs a reason"
    if "postgresql" in backends():
        return ["postgresql"]
    return [pytest.param("postgresql", marks=pytest.mark.skip(
        reason=f"PostgreSQL only ({reason}); this run is SQLite-only ({SQLITE_ONLY_ENV}=1)"))]


def _with_database(dsn: str, name: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path="/" + name))


def _asyncpg_dsn(dsn: str) -> str:
    return dsn.replace("postgresql+asyncpg://", "postgresql://", 1)


async def _admin(dsn: str, sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(_asyncpg_dsn(dsn))
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def pg_run_database() -> Any:
    """Create this run's own PostgreSQL database; drop it when the run ends."""
    dsn = os.environ.get(PG_ENV)
    if not dsn:
        yield None
        return
    name = f"orbchain_test_{os.getpid()}_{secrets.token_hex(4)}"
    asyncio.run(_admin(dsn, f'CREATE DATABASE "{name}"'))
    try:
        yield _with_database(dsn, name)
    finally:
        asyncio.run(_admin(dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        asyncio.run(_admin(dsn, f'DROP ROLE IF EXISTS "{name}_signer"'))  # the signer tests' own role


@pytest_asyncio.fixture
async def db_url(db_backend: str, tmp_path: Path, pg_run_database: str | None) -> AsyncIterator[str]:
    """This test's own database: a SQLite file, or a fresh schema in the run's PostgreSQL database."""
    if db_backend == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'orbchain.db'}"
        return
    assert pg_run_database is not None, f"db_backend postgresql without {PG_ENV}"
    schema = f"t_{secrets.token_hex(6)}"
    await _admin(pg_run_database, f'CREATE SCHEMA "{schema}"')
    url = pg_run_database.replace("postgresql://", "postgresql+asyncpg://", 1) if pg_run_database.startswith(
        "postgresql://") else pg_run_database
    yield f"{url}?schema={schema}"
    await _admin(pg_run_database, f'DROP SCHEMA "{schema}" CASCADE')
