"""Handing connections to tasks: SQLite's idle connections, and PostgreSQL's pool without its per-request cost.

Why its own module: how a connection is found for a task (an idle one,
one more from the pool, or the next one given back), given back, or
closed is the part of ``Database`` (core/infra/db.py) that differs most between
the drivers, and the part a request pays for first.
"""

from __future__ import annotations

import asyncio
import collections
import sqlite3
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, AsyncIterator

import aiosqlite
import asyncpg

from .db_pinning import Borrowed, Pinning

SQLITE_BUSY_TIMEOUT_SECONDS = 30
SQLITE_IDLE_CONNECTIONS = 64  # at 50 concurrent requests 16 meant a new connection (and thread) per request
PG_STATEMENT_CACHE_SIZE = 512  # distinct statements prepared per connection (IN lists vary in length)


class ConnectionPool:
    """The connection half of ``Database``: ``_acquire``/``_release`` and the pinning built on them."""

    if TYPE_CHECKING:  # pragma: no cover - defined by Database
        _sqlite_target: str
        _sqlite_uri: bool

        @property
        def is_postgres(self) -> bool: ...

    def _init_connections(self) -> None:
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
        # After disconnect: no connection is handed out or opened (a late task gets an error, not a
        # connection nobody would close), and one given back is closed.
        self._closed = False

    async def _close(self, conn: aiosqlite.Connection) -> None:
        """Close an SQLite connection: its thread ends."""
        self._open.discard(conn)
        await conn.close()

    async def _sqlite_connect(self) -> aiosqlite.Connection:
        if self._closed:
            raise RuntimeError("the database is closed")
        conn = await aiosqlite.connect(self._sqlite_target, isolation_level=None,
                                       timeout=SQLITE_BUSY_TIMEOUT_SECONDS, uri=self._sqlite_uri)
        self._open.add(conn)
        conn.row_factory = dict_row  # type: ignore[assignment]  # a factory function, as sqlite3 allows
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
        connection in a clean state (``reusable``) goes straight from the
        task done with it to the next, and the pool only opens, repairs and
        closes connections. At most the pool's ``max_size`` are out.
        """
        while True:
            while self._spare:
                conn = self._spare.pop()
                if reusable(conn):
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
        elif reusable(conn):
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

    def _conn(self) -> Borrowed:
        """The task's pinned connection, else one borrowed for a single statement."""
        return Borrowed(self)

    def connection(self) -> Pinning:
        """Pin one connection to the current task (fewer acquires per request)."""
        return Pinning(self)

    @asynccontextmanager
    async def driver_connection(self) -> AsyncIterator[Any]:
        """The raw driver connection (asyncpg or aiosqlite) for what this class does not wrap."""
        async with self._conn() as conn:
            yield conn


def reusable(conn: Any) -> bool:
    """Whether a PostgreSQL connection can go straight to the next task: open, idle, no transaction.

    Such a connection needs none of what the pool's release does
    (``keep_session``); anything else goes back through the pool.
    """
    # ``_is_cancelling``: asyncpg's own test before reusing a connection (PoolConnectionHolder.release).
    return not (conn.is_closed() or conn.is_in_transaction() or conn._protocol._is_cancelling())


async def keep_session(conn: asyncpg.Connection) -> None:
    """Pool reset: nothing beyond asyncpg's own rollback of an open transaction.

    asyncpg's default sends ``RESET ALL``/``UNLISTEN *``/advisory unlock on
    every release, a round trip per request; this class changes no session
    state and unlocks its advisory locks itself.
    """


def dict_row(cursor: sqlite3.Cursor, row: tuple) -> dict[str, Any]:
    """sqlite3 row factory, run in the connection's thread: rows arrive as dicts."""
    return dict(zip([column[0] for column in cursor.description], row))
