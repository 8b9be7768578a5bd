"""Every statement a gateway sends to its database, seen where the drivers run it: a count that cannot flake.

Why at the drivers, not in ``Database``: a request's statements do not all
pass through ``Database``. The rate limiter's sync and a signal's NOTIFY go
over the side connection (core/infra/pg_side.py), SQLite's group commit runs
in a connection's thread (core/infra/db_group_commit.py), grouped writes
and keyed reads go straight to asyncpg, and a plugin may use
``driver_connection``. A log above the drivers sees only what it is told
about; ``StatementLog`` sees everything:

* asyncpg: every execution on every connection of the process (pooled,
  pinned, side, one-off), hooked on ``asyncpg.Connection``, its prepared
  statements, cursors and COPY, so a statement asyncpg runs for itself (a
  type look-up on a connection's first use of a type) counts too. Preparing
  a statement (once per connection and text) is not an execution.
* sqlite3: SQLite's own trace of every statement it runs (transaction
  control included) on every connection opened while the log is installed:
  aiosqlite's threads, the inline reader, a plugin's own. SQLite reports a
  statement once more per trigger program it fires, and ``executemany``
  once per row.

Why it cannot flake: ``window()`` records from its start until every task
started inside it has ended (a NOTIFY sent after the answer, a group
commit's writer), then, given the gateway, pushes the rate limiter's counts
the window left pending (the statement its hits cost at the next sync).
Nothing is filtered, so nothing else may run meanwhile: ``quiet_process``
stops what runs on a timer (the side connection's heartbeat, the rate
limiter's sync loop) and the ages that would expire caches in the middle of
a count (the auth cache, the side connection's health, the rate limiter's
staleness), and the caller freezes ``gateway.clock`` and keeps the scheduler
off. Cold and warm are then states a test chooses: a fresh process, and the
same request again.
"""

from __future__ import annotations

import asyncio
import functools
import re
import sqlite3
import threading
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable

import asyncpg
import asyncpg.cursor
import asyncpg.prepared_stmt
import pytest
from orbchain.core.infra.ratelimit import RATE_LIMITER

__all__ = ["Statement", "StatementLog", "Window", "quiet_process", "statement_label", "statement_log"]

# How long ``window`` waits for the tasks started inside it before it names them (a task that never ends is
# a window's mistake, reported as one instead of a test that hangs).
SETTLE_SECONDS = 60.0
# What ``quiet_process`` sets the timers and ages to: longer than any test.
QUIET_SECONDS = 24 * 3600


@dataclass(frozen=True)
class Statement:
    """One statement a driver ran: which driver, and its SQL (SQLite's with its values written in)."""

    driver: str  # "asyncpg" or "sqlite3"
    sql: str

    @property
    def label(self) -> str:
        return statement_label(self.sql)


_SPACE = re.compile(r"\s+")
_LITERALS = re.compile(r"'(?:[^']|'')*'")
# A table after FROM, JOIN, INTO or UPDATE (not ``DO UPDATE``); ``name(`` is a function, not a table.
_TABLES = re.compile(r"(?<!\bDO )\b(?:FROM|JOIN|INTO|UPDATE)\s+([A-Za-z_][A-Za-z0-9_.]*)\b(?!\()", re.IGNORECASE)
# ``name AS (`` or ``name(columns) AS (``: a part of a WITH, not a table (found overlapping: parts nest).
_NAMED_PARTS = re.compile(r"(?=\b([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^()]*\))?\s+AS\s*\()", re.IGNORECASE)
_FUNCTION = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\(")
_CONTROL = ("BEGIN IMMEDIATE", "ROLLBACK TO", "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


def statement_label(sql: str) -> str:
    """A statement's short name in a diff: its first keyword and the tables it names, sorted.

    ``SELECT k.*, m.enabled FROM api_keys k JOIN merchants m ...`` is
    ``SELECT api_keys merchants``, one naming no table the first function it
    calls (``SELECT pg_notify``); transaction control is its command
    (``SAVEPOINT``, ``BEGIN IMMEDIATE``). Values, savepoint names and the
    names of a ``WITH``'s parts, which differ between runs or say nothing,
    never appear.
    """
    text = _LITERALS.sub("?", _SPACE.sub(" ", sql).strip())
    upper = text.upper()
    for command in _CONTROL:
        if upper == command or upper.startswith(command + " "):
            return command
    parts = {name.lower() for name in _NAMED_PARTS.findall(text)}
    tables = {name.rsplit(".", 1)[-1].lower() for name in _TABLES.findall(text)} - parts
    if not tables:
        tables = {found.group(1).lower()} if (found := _FUNCTION.search(text)) else set()
    return " ".join([upper.split(" ", 1)[0] or "?", *sorted(tables)])


def one_line(sql: str, width: int = 110) -> str:
    """The SQL on one line, cut to ``width`` characters (failure messages)."""
    text = _SPACE.sub(" ", sql).strip()
    return text if len(text) <= width else text[: width - 1] + "…"


# asyncpg's methods that send a statement to the server, and where each finds its SQL.
def _query_argument(_self: Any, query: Any, *_args: Any, **_kwargs: Any) -> str:
    return str(query)


def _own_query(self: Any, *_args: Any, **_kwargs: Any) -> str:
    return str(self._query)


def _copy_records(_self: Any, table_name: str, *_args: Any, **_kwargs: Any) -> str:
    return f"COPY {table_name} FROM STDIN"


_ASYNCPG_SENDS: tuple[tuple[type, str, Callable[..., str]], ...] = (
    # fetch*, execute with arguments, executemany, and asyncpg's own type introspection.
    (asyncpg.connection.Connection, "_do_execute", _query_argument),
    (asyncpg.connection.Connection, "_copy_out", _query_argument),
    (asyncpg.connection.Connection, "_copy_in", _query_argument),
    (asyncpg.connection.Connection, "copy_records_to_table", _copy_records),
    (asyncpg.prepared_stmt.PreparedStatement, "_PreparedStatement__do_execute", _own_query),
    (asyncpg.cursor.BaseCursor, "_bind_exec", _own_query),
    (asyncpg.cursor.BaseCursor, "_bind", _own_query),
)


class StatementLog:
    """The drivers' hooks (``install``/``uninstall``) and the windows that record through them.

    Install it before the gateway opens its database: SQLite is traced per
    connection, from its opening (asyncpg's hooks are on its classes).
    """

    def __init__(self) -> None:
        self._recording: list[Statement] | None = None
        self._lock = threading.Lock()  # SQLite's trace also runs in aiosqlite's threads
        self._undo: list[Callable[[], None]] = []

    def install(self) -> None:
        if self._undo:
            return
        for owner, name, sql_of in _ASYNCPG_SENDS:
            self._wrap_async(owner, name, sql_of)
        self._wrap_simple_execute()
        self._trace_new_sqlite_connections()

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()

    def _record(self, driver: str, sql: str) -> None:
        with self._lock:
            if self._recording is not None:
                self._recording.append(Statement(driver, sql))

    def _replace(self, owner: Any, name: str, replacement: Any) -> None:
        original = owner.__dict__[name]
        setattr(owner, name, replacement)
        self._undo.append(lambda: setattr(owner, name, original))

    def _wrap_async(self, owner: type, name: str, sql_of: Callable[..., str]) -> None:
        original = getattr(owner, name)
        record = self._record

        @functools.wraps(original)
        async def counted(*args: Any, **kwargs: Any) -> Any:
            record("asyncpg", sql_of(*args, **kwargs))
            return await original(*args, **kwargs)

        self._replace(owner, name, counted)

    def _wrap_simple_execute(self) -> None:
        """``Connection.execute`` without arguments takes the simple protocol, past ``_do_execute``."""
        original = asyncpg.connection.Connection.execute
        record = self._record

        @functools.wraps(original)
        async def execute(conn: Any, query: str, *args: Any, **kwargs: Any) -> Any:
            if not args:
                record("asyncpg", query)
            return await original(conn, query, *args, **kwargs)

        self._replace(asyncpg.connection.Connection, "execute", execute)

    def _trace_new_sqlite_connections(self) -> None:
        """Every sqlite3 connection opened from now on reports its statements here (aiosqlite opens through it)."""
        original = sqlite3.connect
        record = self._record

        @functools.wraps(original)
        def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = original(*args, **kwargs)
            conn.set_trace_callback(lambda sql: record("sqlite3", sql))
            return conn

        self._replace(sqlite3, "connect", connect)

    @asynccontextmanager
    async def window(self, gateway: Any = None) -> AsyncIterator["Window"]:
        """Record every statement from here until the block, and every task started inside it, has ended.

        With ``gateway``, its rate limiter's counts still pending at the end
        are pushed inside the window: on PostgreSQL every hit costs its share
        of a sync (core/infra/ratelimit.py), which would otherwise run after
        the count.
        """
        if not self._undo:
            raise RuntimeError("install() the statement log before recording")
        if self._recording is not None:
            raise RuntimeError("one window at a time")
        loop = asyncio.get_running_loop()
        previous = loop.get_task_factory()
        started: list[asyncio.Future[Any]] = []

        def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> Any:
            task = previous(loop, coro, **kwargs) if previous is not None else asyncio.Task(coro, loop=loop, **kwargs)
            started.append(task)
            return task

        window = Window()
        with self._lock:
            self._recording = window.statements
        loop.set_task_factory(factory)
        try:
            yield window
            await _settle(started)
            if gateway is not None:
                await _push_rate_counts(gateway)
                await _settle(started)
        finally:
            loop.set_task_factory(previous)
            with self._lock:
                self._recording = None


@dataclass
class Window:
    """What one ``StatementLog.window`` recorded, in the order the drivers ran it."""

    statements: list[Statement] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.statements)

    @property
    def labels(self) -> list[str]:
        return [s.label for s in self.statements]

    def listing(self) -> str:
        """The statements numbered one a line (failure messages)."""
        lines = [f"{i:4}  {s.driver:7}  {one_line(s.sql)}" for i, s in enumerate(self.statements, 1)]
        return "\n".join(lines) or "      (none)"

    def transaction_around(self, marker: str) -> Window:
        """The transaction that ran the first statement starting with ``marker``: from its BEGIN to its COMMIT.

        Why: a scan runs many transactions; a count of one of them (the crediting transaction, around its
        ``UPDATE deposits SET status``) must not move with the scan's other work.
        """
        sqls = [_SPACE.sub(" ", s.sql).strip() for s in self.statements]
        marked = next(i for i, sql in enumerate(sqls) if sql.startswith(marker))
        begin = max(i for i in range(marked) if sqls[i].startswith("BEGIN"))
        commit = next(i for i in range(marked, len(sqls)) if sqls[i] == "COMMIT")
        return Window(self.statements[begin:commit + 1])


def _lives_with_a_connection(task: asyncio.Future[Any]) -> bool:
    """aiohttp's task serving a keep-alive connection: it ends with the connection, not with a request."""
    coro = task.get_coro() if isinstance(task, asyncio.Task) else None
    return getattr(coro, "__qualname__", "") == "RequestHandler.start"


async def _settle(started: list[asyncio.Future[Any]]) -> None:
    """Wait until every task started in the window, and every task those started, has ended."""
    while pending := [t for t in started if not t.done() and not _lives_with_a_connection(t)]:
        _, still = await asyncio.wait(pending, timeout=SETTLE_SECONDS)
        if still:
            names = sorted(t.get_name() if isinstance(t, asyncio.Task) else repr(t) for t in still)
            raise AssertionError(f"tasks started in the window did not end within {SETTLE_SECONDS:.0f} s: {names}")


async def _push_rate_counts(gateway: Any) -> None:
    limiter = gateway.services.get(RATE_LIMITER)
    sync = getattr(limiter, "sync", None)  # the in-memory limiter (SQLite) has nothing to push
    if sync is not None:
        await sync()


def quiet_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing runs on a timer and no cache ages in a process started after this call (for ``window``).

    The side connection's heartbeat and the rate limiter's sync loop wait
    ``QUIET_SECONDS`` between runs; the auth cache's entries, the side
    connection's health and the rate limiter's counts stay fresh as long.
    Freeze ``gateway.clock`` too (key use, rate-limit windows).
    """
    from ..core.accounts import auth_cache
    from ..core.infra import pg_side, ratelimit

    for module, name in ((pg_side, "HEARTBEAT_SECONDS"), (pg_side, "STALE_AFTER_SECONDS"),
                         (ratelimit, "SYNC_SECONDS"), (ratelimit, "STALE_SECONDS"),
                         (auth_cache, "MAX_AGE_SECONDS")):
        monkeypatch.setattr(module, name, QUIET_SECONDS)


@pytest.fixture
def statement_log(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A ``StatementLog`` installed for the test, in a quiet process (``quiet_process``)."""
    quiet_process(monkeypatch)
    log = StatementLog()
    log.install()
    try:
        yield log
    finally:
        log.uninstall()
