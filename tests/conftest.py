"""Shared fixtures: every database-backed test runs on SQLite and on PostgreSQL.

PostgreSQL runs when ``ORBCHAIN_TEST_PG_DSN`` names a server (``make test``
sets it). The run creates its own database there and drops it at the end,
and each test gets a fresh schema inside it, so no test sees another's rows.
Under CI a missing DSN is an error, never a silent skip.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path
from typing import Any, AsyncIterator, Callable
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from orbchain.core.config import Config, load_config
from orbchain.core.gateway import Gateway, build_gateway
from orbchain.core.migrate import migrate
from orbchain.core.plugins import get_plugin_manager
from orbchain.web.app import create_app

PG_ENV = "ORBCHAIN_TEST_PG_DSN"


def _backends() -> list[str]:
    return ["sqlite", "postgresql"] if os.environ.get(PG_ENV) else ["sqlite"]


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("CI") and not os.environ.get(PG_ENV):
        raise pytest.UsageError(f"CI run without {PG_ENV}: PostgreSQL tests would not run (use `make test`)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "db_backend" in metafunc.fixturenames:
        metafunc.parametrize("db_backend", _backends())


def pytest_report_header(config: pytest.Config) -> str:
    return f"orbchain databases under test: {', '.join(_backends())}"


def _with_database(dsn: str, name: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path="/" + name))


def _asyncpg_dsn(dsn: str) -> str:
    return dsn.replace("postgresql+asyncpg://", "postgresql://", 1)


@pytest.fixture(scope="session")
def pg_run_database() -> Any:
    """Create this run's own PostgreSQL database; drop it when the run ends."""
    dsn = os.environ.get(PG_ENV)
    if not dsn:
        yield None
        return
    name = f"orbchain_test_{os.getpid()}_{secrets.token_hex(4)}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(_asyncpg_dsn(dsn))
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield _with_database(dsn, name)
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
async def db_url(db_backend: str, tmp_path: Path, pg_run_database: str | None) -> AsyncIterator[str]:
    if db_backend == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'orbchain.db'}"
        return
    schema = f"t_{secrets.token_hex(6)}"
    conn = await asyncpg.connect(_asyncpg_dsn(pg_run_database))
    try:
        await conn.execute(f'CREATE SCHEMA "{schema}"')
    finally:
        await conn.close()
    url = pg_run_database.replace("postgresql://", "postgresql+asyncpg://", 1) if pg_run_database.startswith(
        "postgresql://") else pg_run_database
    yield f"{url}?schema={schema}"
    conn = await asyncpg.connect(_asyncpg_dsn(pg_run_database))
    try:
        await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    finally:
        await conn.close()


@pytest.fixture
def make_config(tmp_path: Path, db_url: str) -> Callable[..., Config]:
    """``make_config(server={...}, webhooks={...})``: a test config on this test's database."""

    def make(**sections: dict[str, Any]) -> Config:
        base = load_config(None, environ={}).with_overrides(
            server={"data_dir": str(tmp_path / "var"), "environment": "development"},
            database={"url": db_url},
            webhooks={"allow_private_urls": True},
        )
        return base.with_overrides(**sections) if sections else base

    return make


@pytest.fixture
def config(make_config: Callable[..., Config]) -> Config:
    return make_config()


@pytest.fixture
async def gateway(config: Config) -> AsyncIterator[Gateway]:
    """A migrated gateway without HTTP, for service-level tests."""
    from orbchain.core.secrets import load_secrets

    gw = build_gateway(config, get_plugin_manager(blocked=config.plugins.blocked))
    await gw.db.connect()
    await migrate(gw.db, gw.migrations)
    gw.secrets = load_secrets(config)
    try:
        yield gw
    finally:
        await gw.db.disconnect()


@pytest.fixture
def make_client(aiohttp_client: Callable) -> Callable:
    """``await make_client(config)``: a test client of a full app."""

    async def make(cfg: Config, plugin_manager: Any = None) -> Any:
        app = create_app(cfg, plugin_manager)
        return await aiohttp_client(app)

    return make


@pytest.fixture
async def client(make_client: Callable, config: Config) -> Any:
    return await make_client(config)
