"""The database handle: asyncpg on PostgreSQL, aiosqlite on SQLite, one interface.

Why a thin wrapper over the drivers (and no query builder in between):

* Speed on the hot path. Service code writes SQL with ``:name`` parameters;
  the text is turned into the driver's form once per distinct SQL string
  (a small cache) and asyncpg prepares each statement once per connection
  (its statement cache). Compiling every query through SQLAlchemy, as the
  ``databases`` package did, was about a fifth of a payment read
  (docs/decisions.md, "The database layer").
* SQLite allows one writer at a time. Instead of letting concurrent
  requests race into "database is locked", every write in this process
  takes one ``asyncio.Lock`` and a transaction claims SQLite's write lock up
  front (``BEGIN IMMEDIATE``), so the busy timeout covers other processes
  (the CLI) and a transaction never has to upgrade a read lock mid-way.
* Amount columns differ: ``NUMERIC(78,0)`` on PostgreSQL, integer strings on
  SQLite (its numbers are 64-bit or float). ``amount_param``/``to_int`` hide
  that, and the SQL never does arithmetic on amounts in SQLite.
* Short SQLite reads skip the hop to a connection's thread: they run on the
  event loop's thread, on a read-only connection of their own, and one that
  would wait, write or run long is stopped and goes to a thread as before
  (``_read_inline``).
* Small dialect differences (``FOR UPDATE``, advisory locks) live here so
  service code stays dialect-neutral.

Values come back as the drivers give them (no type conversion here): on
PostgreSQL ``Decimal`` for NUMERIC, ``bool`` for BOOLEAN; on SQLite ``str``
amounts and ``0``/``1`` booleans. Rows are plain dicts.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import hashlib
import itertools
import re
import sqlite3
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, AsyncIterator, Mapping, Sequence
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

import aiosqlite
import asyncpg

from .pg_groups import Groups, WriteGroups

Row = Mapping[str, Any]

SQLITE_BUSY_TIMEOUT_SECONDS = 30
# ``disconnect``: how long connections still in use at the close may take to end (their statement is
# interrupted first); one still busy after it ends its thread when its statement ends.
DISCONNECT_SECONDS = 1.0
SQLITE_IDLE_CONNECTIONS = 64  # at 50 concurrent requests 16 meant a new connection (and thread) per request
PG_STATEMENT_CACHE_SIZE = 512  # distinct statements prepared per connection (IN lists vary in length)
# SQLite reads on the event loop's thread (``Database._read_inline``, docs/decisions.md): the VM steps a
# statement may take there before it is stopped and run on a connection's thread instead (~0.2-0.6 ms),
# counted in calls of the progress handler every ``SQLITE_INLINE_TICK`` steps; the runs of a statement
# that overran that go straight to a thread; one inline read in so many yields to the loop.
SQLITE_INLINE_STEPS = 10_000
SQLITE_INLINE_TICK = 1_000
SQLITE_INLINE_PAUSE = 100
SQLITE_INLINE_YIELD_EVERY = 32
SQLITE_READER_STATEMENTS = 512  # prepared statements the inline reader keeps (sqlite3's default is 128)
# Why an inline read gives way to a thread (primary result codes): stopped at its step budget, would
# wait for a lock (busy timeout 0), or writes (the connection is read-only). Nothing was done.
_SQLITE_INTERRUPT = 9
_SQLITE_GIVE_WAY = frozenset({5, 6, 8, _SQLITE_INTERRUPT})  # BUSY, LOCKED, READONLY, INTERRUPT


# Batched keyed reads of one kind running at once (``fetch_keyed``): one slow round trip holds up only its own.
READ_GROUPS_IN_FLIGHT = 4


@dataclass(frozen=True)
class KeyedRead:
    """A read of at most one row by a key, written twice: for one key and for many.

    ``one`` takes ``:key``; ``many`` takes ``:keys`` (a list, e.g. ``WHERE
    track_id = ANY(:keys)``) and returns the rows' ``column``, the key, so
    each row finds its caller. ``Database.fetch_keyed`` sends concurrent
    reads as one ``many`` on PostgreSQL. Declare one per read, at module
    level: the batches are kept per instance.
    """

    one: str
    many: str
    column: str


@dataclass(eq=False)
class _Pin:
    """The connection one task is using (pinned by ``connection()`` or a transaction)."""

    task: asyncio.Task | None
    conn: Any
    tx_depth: int = 0
    savepoints: itertools.count = field(default_factory=itertools.count)


# The connection the current task has pinned. Tasks spawned from inside inherit
# the variable but are not that task, so they take a connection of their own
# (and on SQLite wait for the writer lock) instead of interleaving statements.
_pinned: contextvars.ContextVar[_Pin | None] = contextvars.ContextVar("orbchain_db_pin", default=None)


def _current_pin() -> _Pin | None:
    pin = _pinned.get()
    if pin is not None and pin.task is asyncio.current_task():
        return pin
    return None


def _in_write_tx() -> bool:
    pin = _current_pin()
    return pin is not None and pin.tx_depth > 0


class Database:
    """Async access to the gateway's database, identical on both dialects."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.dialect = "postgresql" if url.startswith("postgres") else "sqlite"
        self._write_lock = asyncio.Lock()
        self._writer: aiosqlite.Connection | None = None  # SQLite: the one connection every write uses
        self._pool: Any = None  # asyncpg.Pool on PostgreSQL
        # PostgreSQL: connections taken out of asyncpg's pool go from task to task here (``_acquire``).
        self._spare: list[asyncpg.Connection] = []  # idle, still checked out of the pool
        # Checked-out connection -> the pool's proxy for it (``_pg_acquire``): queries go to the
        # connection itself, only the pool's release takes the proxy.
        self._proxies: dict[asyncpg.Connection, Any] = {}
        self._taken = 0  # checked out of the pool (idle here or in use)
        self._waiters: collections.deque[asyncio.Future[Any]] = collections.deque()
        self._idle: list[aiosqlite.Connection] = []  # SQLite connections ready for the next task
        # SQLite: every connection open now, idle or in a task's hands; each holds a (non-daemon) thread
        # that keeps the process alive until the connection is closed, so ``disconnect`` closes them all.
        self._open: set[aiosqlite.Connection] = set()
        self._reader: _InlineReader | None = None  # SQLite: reads on the loop's thread (``_read_inline``)
        self._overran: dict[str, int] = {}  # statement -> runs left to send straight to a thread
        self._inline_reads = 0
        # After disconnect: no connection is handed out or opened (a late task gets an error, not a
        # connection nobody would close), and one given back is closed.
        self._closed = False
        # SQLite: execute_atomic calls waiting to be committed together (``_write_groups``).
        self._grouped: list[tuple[list[tuple[str, dict[str, Any]]], asyncio.Future[None]]] = []
        self._group_writer: asyncio.Future[None] | None = None
        # PostgreSQL: execute_atomic calls of pinned tasks written together (core/pg_groups.py).
        self._pg_groups = WriteGroups()
        # PostgreSQL: fetch_keyed calls of pinned tasks, read together per KeyedRead (core/pg_groups.py).
        self._read_groups: dict[KeyedRead, Groups[Any]] = {}
        #: Round trips so far, transaction control included (tests count a request's with it).
        self.query_count = 0
        #: When a list, every statement's SQL is appended to it (tests see which queries ran).
        self.query_log: list[str] | None = None
        if self.is_sqlite:
            self._sqlite_target, self._sqlite_uri = _sqlite_target(url)
        else:
            self._pg_dsn, self._pg_options = _pg_options(url)

    def __repr__(self) -> str:
        return f"<Database {self.dialect}>"

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @property
    def is_postgres(self) -> bool:
        return self.dialect == "postgresql"

    @property
    def in_transaction(self) -> bool:
        """Whether the current task is inside ``transaction()`` (a nested one is a savepoint)."""
        return _in_write_tx()

    # -- lifecycle -----------------------------------------------------------

    async def connect(self) -> None:
        self._closed = False
        if self.is_postgres:
            self._pool = await asyncpg.create_pool(
                self._pg_dsn, statement_cache_size=PG_STATEMENT_CACHE_SIZE, reset=_keep_session,
                **self._pg_options)
            return
        if not self._sqlite_uri and self._sqlite_target != ":memory:":
            Path(self._sqlite_target).parent.mkdir(parents=True, exist_ok=True)
        conn = await self._sqlite_connect()
        try:
            # WAL lets readers proceed while the single writer commits.
            await conn.execute_fetchall("PRAGMA journal_mode=WAL")
        finally:
            await self._release(conn)
        if self._reader is None:
            self._reader = _sqlite_reader(self._sqlite_target, self._sqlite_uri)

    async def disconnect(self) -> None:
        """Close every connection, idle or still in a task's hands, on both dialects.

        Normally nothing is in use any more (the app cancels its requests and
        jobs first). A connection that still is belongs to a task that outlived
        the stop: its statement is interrupted and the connection closed under
        it (the task gets an error; an open transaction rolls back), waiting at
        most ``DISCONNECT_SECONDS``. An SQLite connection left open would keep
        the process from exiting (its thread is not a daemon); a PostgreSQL one
        would keep ``pool.close()`` waiting for its release forever.
        """
        self._closed = True
        if self._pool is not None:
            pool, self._pool = self._pool, None
            spare, self._spare = self._spare, []
            self._taken -= len(spare)
            for conn in spare:
                await pool.release(self._proxies.pop(conn, conn))
            while self._waiters:
                waiter = self._waiters.popleft()
                if not waiter.done():
                    waiter.set_exception(RuntimeError("the database is not connected"))
            for conn in list(self._proxies):  # in use by a task: the pool would wait for it
                conn.terminate()
            await pool.close()
            self._taken = 0
            self._proxies.clear()
        if self._reader is not None:
            reader, self._reader = self._reader, None
            reader.close()
        idle, self._idle = self._idle, []
        if self._writer is not None and not self._write_lock.locked():
            idle.append(self._writer)  # else a task is writing on it: closed below with the others in use
        self._writer = None
        for conn in idle:
            await self._close(conn)
        in_use = list(self._open)
        if in_use:
            for conn in in_use:
                raw = getattr(conn, "_connection", None)  # sqlite3's interrupt() may come from any thread
                if raw is not None:
                    raw.interrupt()
            await asyncio.wait([asyncio.ensure_future(self._close(conn)) for conn in in_use],
                               timeout=DISCONNECT_SECONDS)

    async def _close(self, conn: aiosqlite.Connection) -> None:
        """Close an SQLite connection: its thread ends."""
        self._open.discard(conn)
        await conn.close()

    # -- connections ---------------------------------------------------------------

    async def _sqlite_connect(self) -> aiosqlite.Connection:
        if self._closed:
            raise RuntimeError("the database is closed")
        conn = await aiosqlite.connect(self._sqlite_target, isolation_level=None,
                                       timeout=SQLITE_BUSY_TIMEOUT_SECONDS, uri=self._sqlite_uri)
        self._open.add(conn)
        conn.row_factory = _dict_row  # type: ignore[assignment]  # a factory function, as sqlite3 allows
        return conn

    async def _acquire(self) -> Any:
        if self.is_postgres:
            if self._pool is None:
                raise RuntimeError("the database is not connected")
            return await self._pg_acquire()
        if self._idle:
            return self._idle.pop()
        return await self._sqlite_connect()

    async def _release(self, conn: Any) -> None:
        if self.is_postgres:
            await self._pg_release(conn)
            return
        if not self._closed and len(self._idle) < SQLITE_IDLE_CONNECTIONS and not conn.in_transaction:
            self._idle.append(conn)
        else:
            await self._close(conn)

    async def _pg_acquire(self) -> Any:
        """A connection for one task: an idle one, else one more from the pool, else the next released.

        asyncpg's pool acquire and release cost about 25 us of CPU per
        request (a queue, a timeout, a shield, an inactivity timer); here a
        connection in a clean state (``_reusable``) goes straight from the
        task done with it to the next, and the pool only opens, repairs and
        closes connections. At most the pool's ``max_size`` are out.
        """
        while True:
            while self._spare:
                conn = self._spare.pop()
                if _reusable(conn):
                    return conn
                await self._pg_give_back(conn)
            if self._taken < self._pool.get_max_size():
                self._taken += 1
                try:
                    proxy = await self._pool.acquire()
                except BaseException:
                    self._taken -= 1
                    raise
                # The proxy forwards every method call through a wrapper (a few per cent of a
                # read); the connection it wraps is used directly until it goes back.
                conn = proxy._con
                self._proxies[conn] = proxy
                return conn
            waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                conn = await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled() and waiter.result() is not None:
                    await self._pg_release(waiter.result())  # handed over as this task was cancelled: pass it on
                raise
            if conn is not None:
                return conn
            # None: a connection went back to the pool, so there is room to take one

    async def _pg_release(self, conn: Any) -> None:
        if self._pool is None:
            self._proxies.pop(conn, None)
            conn.terminate()  # released after disconnect: the closed pool is waiting for it
        elif _reusable(conn):
            if not self._wake(conn):
                self._spare.append(conn)
        else:
            await self._pg_give_back(conn)

    async def _pg_give_back(self, conn: Any) -> None:
        """Back to the pool, which rolls back, repairs or replaces it; a waiter may then take one."""
        self._taken -= 1
        try:
            await self._pool.release(self._proxies.pop(conn, conn))
        finally:
            self._wake(None)

    def _wake(self, conn: Any) -> bool:
        """Hand ``conn`` (or None: room in the pool) to the first task still waiting; False when none is."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return True
        return False

    def _conn(self) -> "_Borrowed":
        """The task's pinned connection, else one borrowed for a single statement."""
        return _Borrowed(self)

    def connection(self) -> "_Pinning":
        """Pin one connection to the current task (fewer acquires per request)."""
        return _Pinning(self)

    @asynccontextmanager
    async def driver_connection(self) -> AsyncIterator[Any]:
        """The raw driver connection (asyncpg or aiosqlite) for what this class does not wrap."""
        async with self._conn() as conn:
            yield conn

    # -- queries ---------------------------------------------------------------

    def _count(self, query: str) -> None:
        self.query_count += 1
        if self.query_log is not None:
            self.query_log.append(query)

    async def _run(self, conn: Any, query: str, values: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """One statement on ``conn``; every row as a dict."""
        self._count(query)
        if self.is_sqlite:
            return await conn.execute_fetchall(query, values or {})
        sql, args = _pg_bind(query, values)
        return [dict(record.items()) for record in await conn.fetch(sql, *args)]

    def _read_inline(self, query: str, values: Mapping[str, Any] | None) -> list[dict[str, Any]] | None:
        """A SQLite read run on the event loop's thread; None: run it on a connection's thread instead.

        A hop to an aiosqlite thread and back (a queue, a thread wake-up,
        ``call_soon_threadsafe``, GIL hand-offs) cost about 100 us of CPU a
        read under load, more than a primary-key read itself. A task inside
        a write transaction reads on its own connection (its uncommitted
        writes). The read-only connection is in autocommit, so every
        statement sees the last commit (WAL), and it never waits: a
        statement that would wait for a lock (busy timeout 0), write, or run
        past ``SQLITE_INLINE_STEPS`` is stopped with nothing done and goes to
        a thread as before, the last one straight there for its next
        ``SQLITE_INLINE_PAUSE`` runs (a long list need not pay twice). Any
        other error is the statement's own and surfaces as it is.
        """
        reader = self._reader
        if reader is None or (self._overran and self._paused(query)):
            return None
        pin = _current_pin()
        if pin is not None and (pin.tx_depth or pin.conn.in_transaction):
            return None
        try:
            rows = reader.rows(query, values)
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF in _SQLITE_GIVE_WAY:
                if exc.sqlite_errorcode & 0xFF == _SQLITE_INTERRUPT:
                    if len(self._overran) >= 1024:
                        self._overran.clear()
                    self._overran[query] = SQLITE_INLINE_PAUSE
                return None
            self._count(query)
            raise
        except sqlite3.Error:
            self._count(query)
            raise
        if reader.in_transaction:  # it began one (BEGIN, SAVEPOINT): that belongs on the task's connection
            reader.execute("ROLLBACK")
            return None
        self._count(query)
        return rows

    def _paused(self, query: str) -> bool:
        """Whether ``query`` overran the inline budget lately: one run fewer to send to a thread."""
        left = self._overran.get(query)
        if left is None:
            return False
        if left > 1:
            self._overran[query] = left - 1
        else:
            del self._overran[query]
        return True

    async def _inline(self, query: str, values: Mapping[str, Any] | None) -> list[dict[str, Any]] | None:
        """``_read_inline``, now and then yielding to the loop as the hop did (a task reading in a loop)."""
        rows = self._read_inline(query, values)
        if rows is not None:
            self._inline_reads += 1
            if not self._inline_reads % SQLITE_INLINE_YIELD_EVERY:
                await asyncio.sleep(0)
        return rows

    async def fetch_one(self, query: str, values: Mapping[str, Any] | None = None) -> Row | None:
        if self._reader is not None and (rows := await self._inline(query, values)) is not None:
            return rows[0] if rows else None
        async with self._conn() as conn:
            if self.is_postgres:
                self._count(query)
                sql, args = _pg_bind(query, values)
                record = await conn.fetchrow(sql, *args)
                return None if record is None else dict(record.items())
            rows = await self._run(conn, query, values)
        return rows[0] if rows else None

    async def fetch_keyed(self, read: KeyedRead, key: Any) -> Row | None:
        """The row ``read.one`` finds for ``key``, or None.

        On PostgreSQL a task with a pinned connection (every API request)
        outside a transaction shares the round trip: reads of the same
        ``KeyedRead`` arriving while one is in flight go next as one
        ``read.many`` (core/pg_groups.py). A round trip (a send, a receive,
        asyncpg's per-query work) is most of a primary-key read's cost in
        this process, and under load it is paid once for many requests. The
        row is read after the request arrived, as alone. Elsewhere, and on
        SQLite (read on the loop's thread), it is ``fetch_one``.
        """
        pin = _current_pin() if self.is_postgres else None
        if pin is None or pin.tx_depth:
            return await self.fetch_one(read.one, {"key": key})
        groups = self._read_groups.get(read)
        if groups is None:
            groups = self._read_groups[read] = Groups(partial(self._read_group, read), READ_GROUPS_IN_FLIGHT)
        return await groups.submit(pin.conn, key)

    async def _read_group(self, read: KeyedRead, conn: Any, keys: list[Any]) -> list[Any]:
        """Each key's row (a dict of its own) or None; an error only the key's own read would meet, alone."""
        distinct = list(dict.fromkeys(keys))
        if len(distinct) > 1:
            self._count(read.many)
            sql, args = _pg_bind(read.many, {"keys": distinct})
            try:
                found = {record[read.column]: record for record in await conn.fetch(sql, *args)}
                return [None if (record := found.get(key)) is None else dict(record.items()) for key in keys]
            except asyncpg.PostgresError:
                if conn.is_closed():
                    raise
                # Nothing was read: each key alone, so only a failing read's caller hears its error.
        outcomes: dict[Any, Any] = {}
        for key in distinct:
            self._count(read.one)
            sql, args = _pg_bind(read.one, {"key": key})
            try:
                record = await conn.fetchrow(sql, *args)
                outcomes[key] = None if record is None else record
            except asyncpg.PostgresError as exc:
                if conn.is_closed():
                    raise
                outcomes[key] = exc
        return [outcome if outcome is None or isinstance(outcome, BaseException) else dict(outcome.items())
                for outcome in (outcomes[key] for key in keys)]

    async def fetch_all(self, query: str, values: Mapping[str, Any] | None = None) -> list[Row]:
        if self._reader is not None and (rows := await self._inline(query, values)) is not None:
            return rows  # type: ignore[return-value]
        async with self._conn() as conn:
            return await self._run(conn, query, values)  # type: ignore[return-value]

    async def fetch_val(self, query: str, values: Mapping[str, Any] | None = None) -> Any:
        if self._reader is not None and (rows := await self._inline(query, values)) is not None:
            return _first_value(rows)
        async with self._conn() as conn:
            if self.is_postgres:
                self._count(query)
                sql, args = _pg_bind(query, values)
                return await conn.fetchval(sql, *args)
            rows = await self._run(conn, query, values)
        return _first_value(rows)

    async def execute(self, query: str, values: Mapping[str, Any] | None = None) -> Any:
        """Run one statement; returns the first value it returns (``RETURNING``), else None.

        Outside a transaction the statement commits on its own; on SQLite it
        also takes this process's writer lock first.
        """
        if self.is_sqlite and not _in_write_tx():
            async with self._write_lock, self._sqlite_writer():
                return await self._execute(query, values)
        return await self._execute(query, values)

    async def _execute(self, query: str, values: Mapping[str, Any] | None) -> Any:
        async with self._conn() as conn:
            if self.is_postgres:
                self._count(query)
                sql, args = _pg_bind(query, values)
                if not args:
                    await conn.execute(sql)  # simple protocol: DDL and plain statements
                    return None
                return await conn.fetchval(sql, *args)
            return _first_value(await self._run(conn, query, values))

    async def execute_many(self, query: str, values: Sequence[Mapping[str, Any]]) -> None:
        async with self.transaction():
            pin = _current_pin()
            assert pin is not None
            self._count(query)
            if self.is_postgres:
                sql, names = _pg_sql(query)
                await pin.conn.executemany(sql, [_pg_args(names, v) for v in values])
            else:
                cursor = await pin.conn.executemany(query, [dict(v) for v in values])
                await cursor.close()

    async def execute_atomic(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Run independent write statements all or none, in as few round trips as the dialect allows.

        "Independent": no statement reads what another one writes (they may
        run as one statement). Inside a transaction they simply run in order.
        Outside one, PostgreSQL runs them as one statement (data-modifying
        ``WITH`` parts, one round trip and one commit instead of four), and
        concurrent callers' statements go together (core/pg_groups.py);
        SQLite runs them in one transaction, grouped too (``_write_groups``).
        """
        if not statements:
            return
        if self.is_sqlite and len(statements) > 1 and not self.in_transaction:
            for query in ("BEGIN IMMEDIATE", *(query for query, _ in statements), "COMMIT"):
                self._count(query)
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._grouped.append(([(q, dict(v)) for q, v in statements], future))
            if self._group_writer is None or self._group_writer.done():
                self._group_writer = asyncio.ensure_future(self._write_groups())
            await future
            return
        if len(statements) == 1 or self.in_transaction or self.is_sqlite:
            if len(statements) == 1:
                await self.execute(*statements[0])
                return
            async with self.transaction():
                for query, values in statements:
                    await self.execute(query, values)
            return
        query, sql, plan = _pg_combined_plan(tuple(query for query, _ in statements))
        try:
            args = [statements[i][1][name] for i, name in plan]
        except KeyError as exc:
            raise ValueError(f"no value for SQL parameter :{exc.args[0]}") from None
        self._count(query)
        pin = _current_pin()
        if pin is not None:  # grouped with concurrent writers on a writer's own connection (core/pg_groups.py)
            await self._pg_groups.write(pin.conn, sql, args)
            return
        async with self._conn() as conn:
            await conn.fetchval(sql, *args)  # bound by position: no merged dict of renamed values per call

    async def _write_groups(self) -> None:
        """SQLite group commit: every ``execute_atomic`` waiting for the writer goes in one transaction.

        Each caller's statements run inside their own savepoint (all or none
        for that caller; one caller's failure is its own), and one COMMIT,
        one fsync, makes the whole group durable before any caller hears of
        it. Commits are serialised by SQLite and each waits for the disk: one
        per create capped creates at the disk's fsync rate.
        """
        while self._grouped:
            async with self._write_lock, self._sqlite_writer():
                group = [(batch, future) for batch, future in self._grouped if not future.done()]
                self._grouped = []
                if not group:
                    continue
                pin = _current_pin()
                assert pin is not None
                try:
                    # One hop to the connection's thread for the whole group.
                    outcomes = await pin.conn._execute(_sqlite_group, pin.conn._conn, [b for b, _ in group])
                except Exception as exc:  # noqa: BLE001 - the whole group rolled back: every caller hears it
                    outcomes = [exc] * len(group)
                except BaseException:  # cancelled (shutdown): the callers' fate is unknown, as a cancelled write's
                    for _, future in group:
                        future.cancel()
                    raise
                for (_, future), outcome in zip(group, outcomes):
                    if future.done():
                        continue
                    if outcome is None:
                        future.set_result(None)
                    else:
                        future.set_exception(outcome)

    # -- transactions ------------------------------------------------------------

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """A write transaction; nested calls in the same task become savepoints."""
        pin = _current_pin()
        if pin is not None and pin.tx_depth > 0:
            async with self._savepoint(pin):
                yield
            return
        if self.is_sqlite:
            async with self._write_lock, self._sqlite_writer():
                async with self._top_transaction("BEGIN IMMEDIATE"):  # claim SQLite's write lock now
                    yield
        else:
            async with self._top_transaction("BEGIN"):
                yield

    @asynccontextmanager
    async def _sqlite_writer(self) -> AsyncIterator[None]:
        """Pin this process's one SQLite writer connection while holding the write lock.

        Writes are serialised anyway; doing them all on one connection keeps
        its page cache warm (SQLite drops a connection's cache whenever
        another connection wrote), where spreading them over the request's
        connections made creates slower. A writer left inside a transaction
        (a cancelled statement) is closed, and the next write opens another.
        """
        if self._writer is None:
            self._writer = await self._sqlite_connect()
        writer = self._writer
        token = _pinned.set(_Pin(asyncio.current_task(), writer))
        try:
            yield
        finally:
            _pinned.reset(token)
            if self._writer is writer and writer.in_transaction:  # (after disconnect it is closed already)
                self._writer = None
                await self._close(writer)

    @asynccontextmanager
    async def _top_transaction(self, begin: str) -> AsyncIterator[None]:
        async with self.connection():
            pin = _current_pin()
            assert pin is not None
            await self._plain(pin.conn, begin)
            pin.tx_depth = 1
            try:
                yield
            except BaseException:
                pin.tx_depth = 0
                await self._rollback(pin.conn)
                raise
            pin.tx_depth = 0
            try:
                await self._plain(pin.conn, "COMMIT")
            except BaseException:
                await self._rollback(pin.conn)
                raise

    async def _rollback(self, conn: Any) -> None:
        """Roll back after a failure without hiding it; a connection left dirty is not reused.

        A statement cancelled mid-way can leave the connection busy; asyncpg's
        pool then rolls back on release, and a SQLite connection still in a
        transaction is closed instead of kept idle.
        """
        try:  # a connection closed under the task (``disconnect`` at a stop) has nothing left to roll back
            in_tx = (not conn.is_closed() and conn.is_in_transaction()) if self.is_postgres else conn.in_transaction
        except ValueError:  # aiosqlite: closed
            return
        if not in_tx:
            return
        try:
            await self._plain(conn, "ROLLBACK")
        except Exception:  # noqa: BLE001 - the original error is the one to report
            pass

    @asynccontextmanager
    async def _savepoint(self, pin: _Pin) -> AsyncIterator[None]:
        name = f"orbchain_sp_{next(pin.savepoints)}"
        await self._plain(pin.conn, f"SAVEPOINT {name}")
        pin.tx_depth += 1
        try:
            yield
        except BaseException:
            await self._plain(pin.conn, f"ROLLBACK TO SAVEPOINT {name}")
            raise
        finally:
            pin.tx_depth -= 1
        await self._plain(pin.conn, f"RELEASE SAVEPOINT {name}")

    async def _plain(self, conn: Any, statement: str) -> None:
        """A statement without parameters or rows (transaction control)."""
        self._count(statement)
        if self.is_postgres:
            await conn.execute(statement)
        else:
            await conn.execute_fetchall(statement)

    # -- dialect helpers -----------------------------------------------------------

    @property
    def for_update(self) -> str:
        """Row-lock suffix for SELECTs inside a transaction (SQLite is serialised anyway)."""
        return " FOR UPDATE" if self.is_postgres else ""

    def amount_param(self, units: int) -> Any:
        """Bind an integer amount: exact NUMERIC on PostgreSQL, text on SQLite."""
        if not isinstance(units, int) or isinstance(units, bool):
            raise TypeError("amounts are integers in base units")
        return Decimal(units) if self.is_postgres else str(units)

    @staticmethod
    def to_int(value: Any) -> int:
        """Read an amount column back as an exact int."""
        if value is None:
            return 0
        if isinstance(value, (int, str)):
            return int(value)
        if isinstance(value, Decimal):
            if value != value.to_integral_value():
                raise ValueError(f"non-integral amount in database: {value}")
            return int(value)
        raise TypeError(f"unexpected amount type from database: {type(value).__name__}")

    @asynccontextmanager
    async def advisory_lock(self, name: str) -> AsyncIterator[bool]:
        """Try to become the single runner of ``name`` across processes.

        Yields True when this process holds the lock. PostgreSQL uses a
        session advisory lock on the task's connection; SQLite deployments
        are single-process, so the lock is always granted.
        """
        if not self.is_postgres:
            yield True
            return
        key = _advisory_key(name)
        async with self._conn() as conn:  # the task's pinned connection, as its work runs there
            got = await conn.fetchval("SELECT pg_try_advisory_lock($1)", key)
            try:
                yield bool(got)
            finally:
                if got and not conn.is_closed():  # a closed session released its locks with it
                    try:
                        await conn.execute("SELECT pg_advisory_unlock($1)", key)
                    except BaseException:
                        conn.terminate()  # the session ends, and its lock with it
                        raise


def is_unique_violation(exc: BaseException) -> bool:
    """Whether ``exc`` is a UNIQUE (or primary key) violation, on either driver.

    Callers that guard a claim with a unique constraint (a signup's email, a
    plugin's one-row-per-period) tell "somebody else got there first" from a
    real failure with it.
    """
    return isinstance(exc, (sqlite3.IntegrityError, asyncpg.exceptions.UniqueViolationError))


class _Borrowed:
    """``Database._conn()``: a plain class, not ``@asynccontextmanager``, as it wraps every statement.

    A generator-based context manager costs a generator, a frame and two
    extra awaits per use, a few per cent of a payment read.
    """

    __slots__ = ("_db", "_conn")

    def __init__(self, db: Database) -> None:
        self._db = db
        self._conn: Any = None

    async def __aenter__(self) -> Any:
        pin = _current_pin()
        if pin is not None:
            return pin.conn
        self._conn = await self._db._acquire()
        return self._conn

    async def __aexit__(self, *exc: object) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await self._db._release(conn)


class _Pinning:
    """``Database.connection()``: pins a connection to the task unless one already is."""

    __slots__ = ("_db", "_conn", "_token")

    def __init__(self, db: Database) -> None:
        self._db = db
        self._conn: Any = None
        self._token: contextvars.Token | None = None

    async def __aenter__(self) -> None:
        if _current_pin() is not None:
            return
        self._conn = await self._db._acquire()
        self._token = _pinned.set(_Pin(asyncio.current_task(), self._conn))

    async def __aexit__(self, *exc: object) -> None:
        if self._token is None:
            return
        token, conn, self._token, self._conn = self._token, self._conn, None, None
        _pinned.reset(token)
        await self._db._release(conn)


def _reusable(conn: Any) -> bool:
    """Whether a PostgreSQL connection can go straight to the next task: open, idle, no transaction.

    Such a connection needs none of what the pool's release does
    (``_keep_session``); anything else goes back through the pool.
    """
    # ``_is_cancelling``: asyncpg's own test before reusing a connection (PoolConnectionHolder.release).
    return not (conn.is_closed() or conn.is_in_transaction() or conn._protocol._is_cancelling())


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Pool reset: nothing beyond asyncpg's own rollback of an open transaction.

    asyncpg's default sends ``RESET ALL``/``UNLISTEN *``/advisory unlock on
    every release, a round trip per request; this class changes no session
    state and unlocks its advisory locks itself.
    """


def _sqlite_group(conn: sqlite3.Connection,
                  batches: list[list[tuple[str, dict[str, Any]]]]) -> list[BaseException | None]:
    """Run in an aiosqlite connection's thread: each batch all or none, the group in one transaction.

    Returns each batch's outcome: None when its statements ran, else the
    exception that rolled it back (to its savepoint) while the others went on.
    """
    outcomes: list[BaseException | None] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statements in batches:
            conn.execute("SAVEPOINT orbchain_group")
            try:
                for query, values in statements:
                    conn.execute(query, values).fetchall()  # stepped to the end (RETURNING)
            except Exception as exc:  # noqa: BLE001 - this batch's failure goes back to its own caller
                conn.execute("ROLLBACK TO orbchain_group")
                outcomes.append(exc)
            else:
                outcomes.append(None)
            conn.execute("RELEASE orbchain_group")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return outcomes


def _dict_row(cursor: sqlite3.Cursor, row: tuple) -> dict[str, Any]:
    """sqlite3 row factory, run in the connection's thread: rows arrive as dicts."""
    return dict(zip([column[0] for column in cursor.description], row))


def _first_value(rows: list[dict[str, Any]]) -> Any:
    if not rows:
        return None
    return next(iter(rows[0].values()), None)


# -- ``:name`` parameters -> asyncpg's ``$n`` ------------------------------------------------

# Outside quotes and comments, ``:name`` is a parameter, as in SQLAlchemy's
# ``text()``; ``::type`` casts and ``\:`` (a literal colon) are not.
_PARAM = re.compile(r"(?<![:\w\\]):(\w+)(?!:)")
_QUOTED_OR_COMMENT = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", re.S)


def _map_params(query: str, replace: Any, unescape: bool = False) -> str:
    """``query`` with each ``:name`` parameter (outside quotes and comments) replaced by ``replace(name)``.

    With ``unescape``, ``\\:`` outside quotes becomes a plain colon (the final form).
    """
    def sub(text: str) -> str:
        text = _PARAM.sub(lambda match: replace(match.group(1)), text)
        return text.replace("\\:", ":") if unescape else text

    out, last = [], 0
    for quoted in _QUOTED_OR_COMMENT.finditer(query):
        out.append(sub(query[last:quoted.start()]))
        out.append(quoted.group(0))
        last = quoted.end()
    out.append(sub(query[last:]))
    return "".join(out)


@lru_cache(maxsize=4096)
def _pg_sql(query: str) -> tuple[str, tuple[str, ...]]:
    """``query`` with ``$1..$n`` for its ``:name`` parameters, and the names in order.

    One number per distinct name, so a name used twice binds once. Cached:
    the same SQL text is converted once per process.
    """
    names: dict[str, int] = {}
    converted = _map_params(query, lambda name: "$" + str(names.setdefault(name, len(names) + 1)), unescape=True)
    return converted, tuple(names)


@lru_cache(maxsize=256)
def _pg_combined(queries: tuple[str, ...]) -> str:
    """Several data-modifying statements as one: the first ones become ``WITH`` parts.

    Parameters are renamed ``s<i>_<name>`` so the statements' names never meet.
    PostgreSQL runs every data-modifying ``WITH`` part exactly once, whether
    or not the main statement reads it.
    """
    renamed = [_map_params(query, lambda name, i=i: f":s{i}_{name}") for i, query in enumerate(queries)]
    parts = ", ".join(f"orbchain_w{i} AS ({query})" for i, query in enumerate(renamed[:-1]))
    return f"WITH {parts} {renamed[-1]}"


@lru_cache(maxsize=256)
def _pg_combined_plan(queries: tuple[str, ...]) -> tuple[str, str, tuple[tuple[int, str], ...]]:
    """``_pg_combined`` of ``queries``, its ``$n`` form, and for each ``$n`` (statement index, parameter name)."""
    combined = _pg_combined(queries)
    sql, names = _pg_sql(combined)
    plan = []
    for name in names:
        index, _, original = name[1:].partition("_")
        plan.append((int(index), original))
    return combined, sql, tuple(plan)


def _pg_args(names: tuple[str, ...], values: Mapping[str, Any] | None) -> list[Any]:
    try:
        return [values[name] for name in names] if names else []  # type: ignore[index]
    except (KeyError, TypeError):
        missing = [name for name in names if not values or name not in values]
        raise ValueError(f"no value for SQL parameter(s) {', '.join(':' + n for n in missing)}") from None


def _pg_bind(query: str, values: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
    sql, names = _pg_sql(query)
    return sql, _pg_args(names, values)


# -- URLs ------------------------------------------------------------------------------------


def _sqlite_target(url: str) -> tuple[str, bool]:
    """The file (or ``file:`` URI when the URL has options) of a ``sqlite[+aiosqlite]:///path`` URL."""
    parts = urlsplit(url)
    path = unquote(parts.path[1:]) if parts.path.startswith("/") else unquote(parts.path)
    if parts.query:
        return f"file:{path}?{parts.query}", True
    return path or ":memory:", False


class _InlineReader(sqlite3.Connection):
    """The read-only connection of ``Database._read_inline``, used on the event loop's thread only.

    Its progress handler (``_tick``) runs every ``SQLITE_INLINE_TICK`` VM
    steps and stops the statement once its budget is spent. SQLite counts a
    prepared statement's steps over all its runs (the cache reuses it), so
    a budget of a single call would stop one short read in a hundred: each
    statement gets its own count of calls instead.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ticks_left = 0
        self.set_progress_handler(self._tick, SQLITE_INLINE_TICK)

    def _tick(self) -> bool:
        self.ticks_left -= 1
        return self.ticks_left < 0

    def rows(self, query: str, values: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """Every row as a dict, as ``_dict_row`` gives them (the column names taken once)."""
        self.ticks_left = SQLITE_INLINE_STEPS // SQLITE_INLINE_TICK
        cursor = self.execute(query, values or {})
        try:
            description = cursor.description
            rows = cursor.fetchall()
        finally:
            cursor.close()
        if description is None:
            return []
        names = [column[0] for column in description]
        return [dict(zip(names, row)) for row in rows]


def _sqlite_reader(target: str, uri: bool) -> _InlineReader | None:
    """A read-only connection to ``target`` for ``Database._read_inline``; None when there can be none.

    Autocommit (no read transaction outlives a statement), busy timeout 0
    (a lock is waited for on a thread, never on the loop), a private cache,
    and the schema loaded now, outside the step budget. An in-memory
    database cannot be shared with a second connection, and one that cannot
    be opened read-only keeps every read on the threads.
    """
    path, _, query = target.removeprefix("file:").partition("?") if uri else (target, "", "")
    options = parse_qsl(query, keep_blank_values=True)
    if path in ("", ":memory:") or ("mode", "memory") in options:
        return None
    if not uri:
        path = quote(path, safe="/")
    options = [(k, v) for k, v in options if k not in ("mode", "cache")] + [("mode", "ro")]
    try:
        reader = sqlite3.connect(f"file:{path}?{urlencode(options)}", uri=True, timeout=0, isolation_level=None,
                                 check_same_thread=False, cached_statements=SQLITE_READER_STATEMENTS,
                                 factory=_InlineReader)
    except sqlite3.Error:
        return None
    try:
        reader.ticks_left = 1 << 30
        reader.execute("SELECT 1 FROM sqlite_master LIMIT 1").close()
    except sqlite3.Error:
        reader.close()
        return None
    return reader


def _pg_options(url: str) -> tuple[str, dict[str, Any]]:
    """asyncpg's DSN and pool options from a ``postgresql[+asyncpg]://`` URL.

    ``min_size``/``max_size`` size the pool (1 and 20 unless given); ``schema``
    selects a dedicated schema through ``search_path`` (operators, and one per
    test). Other options go to asyncpg as they are (``sslmode``, ...).
    """
    url = re.sub(r"^postgres(?:ql)?(?:\+\w+)?://", "postgresql://", url)
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    taken = {k: v for k, v in pairs if k in ("schema", "min_size", "max_size", "ssl")}
    options: dict[str, Any] = {"min_size": int(taken.get("min_size", 1)), "max_size": int(taken.get("max_size", 20))}
    schema = taken.get("schema")
    if schema is not None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", schema):
            raise ValueError("database URL option 'schema' must be a plain SQL identifier")
        options["server_settings"] = {"search_path": schema}
    if "ssl" in taken:
        options["ssl"] = {"true": True, "false": False}.get(taken["ssl"].lower(), taken["ssl"])
    rest = urlencode([(k, v) for k, v in pairs if k not in taken])
    return urlunsplit(parts._replace(query=rest)), options


def _advisory_key(name: str) -> int:
    """A stable signed 63-bit key for ``pg_try_advisory_lock``."""
    digest = hashlib.sha256(f"orbchain:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True) >> 1
