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

The handle is composed of focused modules, each saying why it exists:
``db_dialect`` (``:name`` SQL to asyncpg's ``$n``, combined statements),
``db_urls`` (what each driver is given for a URL), ``db_pinning`` (the
connection the current task uses), ``db_pool`` (handing connections to
tasks), ``db_sqlite_reader`` (SQLite reads on the loop's thread),
``db_keyed`` (keyed reads batched on PostgreSQL) and ``db_group_commit``
(SQLite group commit). ``Database`` here is the one class callers use.

Values come back as the drivers give them (no type conversion here): on
PostgreSQL ``Decimal`` for NUMERIC, ``bool`` for BOOLEAN; on SQLite ``str``
amounts and ``0``/``1`` booleans. Rows are plain dicts.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from contextlib import asynccontextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Mapping, Sequence

import aiosqlite
import asyncpg

from .db_dialect import advisory_key, pg_args, pg_bind, pg_combined_plan, pg_sql
from .db_faults import quiet_pool_tracebacks
from .db_hosts import connect as connect_hosts
from .db_group_commit import GroupCommit
from .db_keyed import KeyedRead, KeyedReads
from .db_pinning import Pin, current_pin, in_write_tx, pinned
from .db_pool import PG_STATEMENT_CACHE_SIZE, ConnectionPool, keep_session
from .db_sqlite_reader import InlineReads, sqlite_reader
from .db_urls import pg_options, sqlite_target
from .pg_groups import WriteGroups
from .pg_sessions import SessionLocks, check_sessions, waited_lock

__all__ = ["DISCONNECT_SECONDS", "Database", "KeyedRead", "Row", "is_unique_violation"]

Row = Mapping[str, Any]
log = logging.getLogger(__name__)

# ``disconnect``: how long connections still in use at the close may take to end (their statement is
# interrupted first); one still busy after it ends its thread when its statement ends.
DISCONNECT_SECONDS = 1.0


class Database(ConnectionPool, InlineReads, KeyedReads, GroupCommit):
    """Async access to the gateway's database, identical on both dialects."""

    def __init__(self, url: str, direct_url: str | None = None) -> None:
        self.url = url
        #: PostgreSQL: where what needs a session goes (LISTEN, advisory locks) when ``url`` is a
        #: transaction pooler (core/infra/pg_sessions.py); ``url`` itself otherwise.
        self.session_url = direct_url or url
        self._direct_url = direct_url
        #: PostgreSQL: whether ``connect`` found ``url`` pooled per transaction (named statements off).
        self.pooled = False
        self._session_locks: SessionLocks | None = None
        self.dialect = "postgresql" if url.startswith("postgres") else "sqlite"
        self._write_lock = asyncio.Lock()
        self._writer: aiosqlite.Connection | None = None  # SQLite: the one connection every write uses
        self._init_connections()  # the pool and SQLite's idle connections (core/infra/db_pool.py)
        self._init_inline_reads()  # SQLite reads on the loop's thread (core/infra/db_sqlite_reader.py)
        self._init_group_commit()  # SQLite: execute_atomic calls committed together (core/infra/db_group_commit.py)
        # PostgreSQL: execute_atomic calls of pinned tasks written together (core/infra/pg_groups.py).
        self._pg_groups = WriteGroups()
        self._init_keyed_reads()  # PostgreSQL: fetch_keyed calls read together (core/infra/db_keyed.py)
        #: Round trips so far, transaction control included (tests count a request's with it).
        self.query_count = 0
        #: When a list, every statement's SQL is appended to it (tests see which queries ran).
        self.query_log: list[str] | None = None
        if self.is_sqlite:
            self._sqlite_target, self._sqlite_uri = sqlite_target(url)
        else:
            self._pg_dsn, self._pg_options = pg_options(url)

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
        return in_write_tx(self)

    # -- lifecycle -----------------------------------------------------------

    async def connect(self) -> None:
        self._closed = False
        if self.is_postgres:
            quiet_pool_tracebacks()  # a refused reconnect is logged by its cause, not a stack (db_faults.py)
            self.pooled = await check_sessions(self.url, self._direct_url)
            if self._direct_url:
                self._session_locks = SessionLocks(self._direct_url)
            # Behind a transaction pooler a statement prepared on one server session is run on another:
            # asyncpg's unnamed statements instead (parsed, bound and run in one exchange).
            # ``connect_hosts``: each host of a multi-host URL its own connect timeout (core/infra/db_hosts.py).
            self._pool = await asyncpg.create_pool(
                self._pg_dsn, statement_cache_size=0 if self.pooled else PG_STATEMENT_CACHE_SIZE,
                reset=keep_session, connect=connect_hosts, **self._pg_options)
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
            self._reader = sqlite_reader(self._sqlite_target, self._sqlite_uri)

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
        if self._session_locks is not None:
            locks, self._session_locks = self._session_locks, None
            await locks.close()
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

    async def replayed_at(self) -> int | None:
        """Unix seconds of the last transaction this server replayed when it is a standby: a report read from
        ``[database] read_url`` is as fresh as that, and its page says so. None on a primary or SQLite (current)."""
        if self.is_sqlite:
            return None
        value = await self.fetch_val("SELECT CASE WHEN pg_is_in_recovery()"
                                     " THEN extract(epoch FROM pg_last_xact_replay_timestamp()) END")
        return None if value is None else int(value)

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
        sql, args = pg_bind(query, values)
        return [dict(record.items()) for record in await conn.fetch(sql, *args)]

    async def fetch_one(self, query: str, values: Mapping[str, Any] | None = None) -> Row | None:
        if self._reader is not None and (rows := await self._inline(query, values)) is not None:
            return rows[0] if rows else None
        async with self._conn() as conn:
            if self.is_postgres:
                self._count(query)
                sql, args = pg_bind(query, values)
                record = await conn.fetchrow(sql, *args)
                return None if record is None else dict(record.items())
            rows = await self._run(conn, query, values)
        return rows[0] if rows else None

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
                sql, args = pg_bind(query, values)
                return await conn.fetchval(sql, *args)
            rows = await self._run(conn, query, values)
        return _first_value(rows)

    async def execute(self, query: str, values: Mapping[str, Any] | None = None) -> Any:
        """Run one statement; returns the first value it returns (``RETURNING``), else None.

        Outside a transaction the statement commits on its own; on SQLite it
        also takes this process's writer lock first.
        """
        if self.is_sqlite and not in_write_tx(self):
            async with self._write_lock, self._sqlite_writer():
                return await self._execute(query, values)
        return await self._execute(query, values)

    async def _execute(self, query: str, values: Mapping[str, Any] | None) -> Any:
        async with self._conn() as conn:
            if self.is_postgres:
                self._count(query)
                sql, args = pg_bind(query, values)
                if not args:
                    await conn.execute(sql)  # simple protocol: DDL and plain statements
                    return None
                return await conn.fetchval(sql, *args)
            return _first_value(await self._run(conn, query, values))

    async def execute_many(self, query: str, values: Sequence[Mapping[str, Any]]) -> None:
        async with self.transaction():
            pin = current_pin(self)
            assert pin is not None
            self._count(query)
            if self.is_postgres:
                sql, names = pg_sql(query)
                await pin.conn.executemany(sql, [pg_args(names, v) for v in values])
            else:
                cursor = await pin.conn.executemany(query, [dict(v) for v in values])
                await cursor.close()

    async def execute_atomic(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Run independent write statements all or none, in as few round trips as the dialect allows.

        "Independent": no statement reads what another one writes (they may
        run as one statement). Inside a transaction they simply run in order.
        Outside one, PostgreSQL runs them as one statement (data-modifying
        ``WITH`` parts, one round trip and one commit instead of four), and
        concurrent callers' statements go together (core/infra/pg_groups.py);
        SQLite runs them in one transaction, grouped too (core/infra/db_group_commit.py).
        """
        if not statements:
            return
        if self.is_sqlite and len(statements) > 1 and not self.in_transaction:
            await self._commit_grouped(statements)  # core/infra/db_group_commit.py
            return
        if len(statements) == 1 or self.in_transaction or self.is_sqlite:
            if len(statements) == 1:
                await self.execute(*statements[0])
                return
            async with self.transaction():
                for query, values in statements:
                    await self.execute(query, values)
            return
        query, sql, plan = pg_combined_plan(tuple(query for query, _ in statements))
        try:
            args = [statements[i][1][name] for i, name in plan]
        except KeyError as exc:
            raise ValueError(f"no value for SQL parameter :{exc.args[0]}") from None
        self._count(query)
        pin = current_pin(self)
        if pin is not None:  # grouped with concurrent writers on a writer's own connection (core/infra/pg_groups.py)
            await self._pg_groups.write(pin.conn, sql, args)
            return
        async with self._conn() as conn:
            await conn.fetchval(sql, *args)  # bound by position: no merged dict of renamed values per call

    # -- transactions ------------------------------------------------------------

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """A write transaction; nested calls in the same task become savepoints."""
        pin = current_pin(self)
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
        token = pinned.set(Pin(asyncio.current_task(), writer, owner=self))
        try:
            yield
        finally:
            pinned.reset(token)
            if self._writer is writer and writer.in_transaction:  # (after disconnect it is closed already)
                self._writer = None
                await self._close(writer)

    def on_commit(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once the current transaction committed; at once outside one; never on a rollback.

        Why: a signal announcing a write (a new webhook wakes the delivery
        job) must not go out before the write is visible to the process that
        hears it, nor for a write that was rolled back. Callbacks added inside
        a savepoint that rolls back are dropped with it. They run on the event
        loop and must not block; one that raises is logged.
        """
        pin = current_pin(self)
        if pin is not None and pin.tx_depth > 0:
            pin.after_commit.append(callback)
        else:
            _run_committed([callback])

    @asynccontextmanager
    async def _top_transaction(self, begin: str) -> AsyncIterator[None]:
        async with self.connection():
            pin = current_pin(self)
            assert pin is not None
            await self._plain(pin.conn, begin)
            pin.tx_depth = 1
            pin.after_commit = []
            try:
                yield
            except BaseException:
                pin.tx_depth = 0
                pin.after_commit = []
                await self._rollback(pin.conn)
                raise
            pin.tx_depth = 0
            committed, pin.after_commit = pin.after_commit, []
            try:
                await self._plain(pin.conn, "COMMIT")
            except BaseException:
                await self._rollback(pin.conn)
                raise
        _run_committed(committed)

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
    async def _savepoint(self, pin: Pin) -> AsyncIterator[None]:
        name = f"orbchain_sp_{next(pin.savepoints)}"
        await self._plain(pin.conn, f"SAVEPOINT {name}")
        pin.tx_depth += 1
        kept = len(pin.after_commit)
        try:
            yield
        except BaseException:
            del pin.after_commit[kept:]  # what the savepoint's work asked for is undone with it
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
        session advisory lock on the task's connection, or on this process's
        lock session of ``direct_url`` when one is set (a transaction pooler
        would leave the lock on a server session nobody unlocks); SQLite
        deployments are single-process, so the lock is always granted.
        """
        if not self.is_postgres:
            yield True
            return
        key = advisory_key(name)
        if self._session_locks is not None:
            async with self._session_locks.held(key) as got:
                yield got
            return
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

    @asynccontextmanager
    async def waited_lock(self, key: int) -> AsyncIterator[None]:
        """Wait for session advisory lock ``key`` (PostgreSQL; SQLite has one process): migrations.

        On a session of its own of ``session_url``: on a pooled connection the
        lock would stay behind on whichever server session took it.
        """
        if not self.is_postgres:
            yield
            return
        async with waited_lock(self.session_url, key):
            yield


def is_unique_violation(exc: BaseException) -> bool:
    """Whether ``exc`` is a UNIQUE (or primary key) violation, on either driver.

    Callers that guard a claim with a unique constraint (a signup's email, a
    plugin's one-row-per-period) tell "somebody else got there first" from a
    real failure with it.
    """
    return isinstance(exc, (sqlite3.IntegrityError, asyncpg.exceptions.UniqueViolationError))


def _first_value(rows: list[dict[str, Any]]) -> Any:
    if not rows:
        return None
    return next(iter(rows[0].values()), None)


def _run_committed(callbacks: list[Callable[[], None]]) -> None:
    """``on_commit`` callbacks, each on its own: one that raises does not stop the others (the write stands)."""
    for callback in callbacks:
        try:
            callback()
        except Exception:  # the transaction committed; its caller must not see a failure
            log.exception("an after-commit callback failed")
