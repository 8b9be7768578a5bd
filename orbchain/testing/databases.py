"""Every database-backed test runs on SQLite and, when a server is named, on PostgreSQL.

``ORBCHAIN_TEST_PG_DSN`` names the PostgreSQL server (``make test`` sets
it). The run creates its own database there and drops it at the end, and
each test gets a fresh schema inside it, so no test sees another's rows.
A test asks for ``db_url`` (or anything built on it) and is parametrized
over ``db_backend`` by the plugin hook below.
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


def backends() -> list[str]:
    return ["sqlite", "postgresql"] if os.environ.get(PG_ENV) else ["sqlite"]


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
