"""The fast tier's guard: a test under tests/unit that starts a process, opens a network socket,
builds an app or test server, or needs PostgreSQL fails here, so ``make test-fast`` stays fast and
honest. Such a test belongs in tests/ (``make test`` runs both). See docs/decisions.md "A fast test tier".

Under ``make test`` these modules run on PostgreSQL too: the only connection allowed is the one to
the server ``ORBCHAIN_TEST_PG_DSN`` names. Gateways are migrated once per plugin set on SQLite and
copied per test (``config`` below); a test without the ``gateway`` fixture still gets an empty database.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit

import pytest
import pytest_asyncio

from orbchain.testing import migrated_schemas

# Fixtures that build an app or a server: such a test is not unit-level.
APP_FIXTURES = frozenset({"client", "make_client", "merchant_shop", "aiohttp_client", "aiohttp_server",
                          "aiohttp_raw_server", "aiohttp_unused_port", "unused_tcp_port"})
POSTGRESQL_ONLY = "postgresql_only"
PG_ENV = "ORBCHAIN_TEST_PG_DSN"
SQLITE_PREFIX = "sqlite+aiosqlite:///"


class UnitTierViolation(AssertionError):
    """A tests/unit test did what the fast tier forbids; move it to tests/."""


def _refuse(what: str, seen: list[str] | None = None) -> Callable[..., Any]:
    def refused(*args: Any, **kwargs: Any) -> Any:
        message = f"a unit test may not {what}: move it out of tests/unit (make test runs it)"
        if seen is not None:
            seen.append(message)
        raise UnitTierViolation(message)

    return refused


def _pg_addresses() -> set[Any]:
    """Where the PostgreSQL of ``make test`` listens: the one connection a unit test may open (its db_url)."""
    dsn = os.environ.get(PG_ENV)
    if not dsn:
        return set()
    parts = urlsplit(dsn)
    host, port = parts.hostname or "127.0.0.1", parts.port or 5432
    return {(host, port), ("127.0.0.1" if host == "localhost" else host, port)}


def install_guard(monkeypatch: pytest.MonkeyPatch, allowed: set[Any] | None = None,
                  seen: list[str] | None = None) -> None:
    """Refuse processes and network sockets for the rest of the test (``monkeypatch`` undoes it).

    Each refusal is also appended to ``seen``, so code that swallows the exception still fails the test.
    """
    allowed = _pg_addresses() if allowed is None else allowed
    monkeypatch.setattr(subprocess.Popen, "_execute_child", _refuse("start a process", seen))
    for name in ("fork", "forkpty", "system", "posix_spawn", "posix_spawnp"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _refuse(f"start a process (os.{name})", seen))
    original_connect, original_connect_ex = socket.socket.connect, socket.socket.connect_ex
    original_bind = socket.socket.bind

    def allowed_address(sock: socket.socket, address: Any) -> bool:
        if sock.family == socket.AF_UNIX:
            return ".s.PGSQL." in str(address) and bool(allowed)
        return isinstance(address, tuple) and tuple(address[:2]) in allowed

    def connect(sock: socket.socket, address: Any) -> Any:
        if not allowed_address(sock, address):
            _refuse(f"open a network connection (to {address!r})", seen)()
        return original_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> Any:
        if not allowed_address(sock, address):
            _refuse(f"open a network connection (to {address!r})", seen)()
        return original_connect_ex(sock, address)

    def bind(sock: socket.socket, address: Any) -> Any:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            _refuse(f"listen on a network socket ({address!r})", seen)()
        return original_bind(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket.socket, "bind", bind)


def unit_tier_problem(item: pytest.Item) -> str | None:
    """Why ``item`` may not be a unit test, judged before it runs (app fixtures, PostgreSQL-only)."""
    app = sorted(APP_FIXTURES.intersection(getattr(item, "fixturenames", ())))
    if app:
        return f"uses the app/server fixture(s) {', '.join(app)}"
    if item.get_closest_marker(POSTGRESQL_ONLY) is not None:
        return f"is marked {POSTGRESQL_ONLY}"
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    problem = unit_tier_problem(item)
    if problem:
        raise UnitTierViolation(f"{item.nodeid} {problem}: a unit test may not; move it out of tests/unit")


REFUSALS = pytest.StashKey[list]()


@pytest.fixture(autouse=True)
def _unit_tier_guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    request.node.stash[REFUSALS] = seen = []
    install_guard(monkeypatch, seen=seen)
    # A unit test's PostgreSQL schema (make test) is migrated for real when no copy exists yet: the copy's pg_dump
    # would be a process the guard refuses (orbchain/testing/migrated_schemas.py).
    monkeypatch.setattr(migrated_schemas, "dumps_allowed", False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A test that passed although the guard refused something (the code caught it) fails all the same."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    seen = item.stash.get(REFUSALS, [])
    if report.when == "call" and report.passed and seen:
        report.outcome = "failed"
        report.longrepr = f"{seen[0]} ({len(seen)} refusal(s), caught by the code under test)"


@pytest.fixture(scope="session")
def _migrated_sqlite_templates(tmp_path_factory: pytest.TempPathFactory) -> dict[Any, Path]:
    """SQLite files migrated once per plugin set, keyed by the blocked plugins (filled by ``config``)."""
    return {}


def _copy_template(template: Path, target: Path) -> None:
    """The test's database file starts as the template (closed, so no write-ahead log is left beside it)."""
    wal = Path(f"{template}-wal")
    assert not wal.exists() or not wal.stat().st_size, f"{wal} holds unwritten pages"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, target)


async def _migrated_template(config: Any, path: Path) -> Path:
    """A SQLite file at ``path`` migrated for ``config``'s plugin set."""
    from orbchain.core.infra.migrate import migrate
    from orbchain.core.contract.plugins import get_plugin_manager
    from orbchain.core.startup import build_gateway

    cfg = config.with_overrides(database={"url": SQLITE_PREFIX + str(path)})
    gw = build_gateway(cfg, get_plugin_manager(blocked=cfg.plugins.blocked))
    await gw.db.connect()
    try:
        await migrate(gw.db, gw.migrations)
    finally:
        await gw.db.disconnect()
    return path


@pytest_asyncio.fixture
async def config(config: Any, db_backend: str, request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory, _migrated_sqlite_templates: dict[Any, Path]) -> Any:
    """The kit's config; when the test's ``gateway`` (the kit's) is built on SQLite, its file starts as a copy.

    The kit's gateway still runs the migrations (they find nothing to do), so a template missing one would
    still be migrated; a test without ``gateway`` keeps an empty database. PostgreSQL is untouched.
    """
    if db_backend == "sqlite" and "gateway" in request.node.fixturenames and config.database.url.startswith(
            SQLITE_PREFIX):
        key = tuple(sorted(config.plugins.blocked))
        if key not in _migrated_sqlite_templates:
            path = tmp_path_factory.mktemp("migrated") / "template.db"
            _migrated_sqlite_templates[key] = await _migrated_template(config, path)
        _copy_template(_migrated_sqlite_templates[key], Path(config.database.url[len(SQLITE_PREFIX):]))
    return config
