"""The database handle: the ``databases`` package on SQLite or PostgreSQL.

Why a thin wrapper instead of the raw ``databases.Database``:

* SQLite allows one writer at a time. Instead of letting concurrent
  requests race into "database is locked", every write transaction in this
  process takes one ``asyncio.Lock`` and then claims SQLite's write lock
  up front (a one-row write), so the busy timeout covers other processes
  (the CLI) and a transaction never has to upgrade a read lock mid-way.
* Amount columns differ: ``NUMERIC(78,0)`` on PostgreSQL, integer strings on
  SQLite (its numbers are 64-bit or float). ``amount_param``/``to_int`` hide
  that, and the SQL never does arithmetic on amounts in SQLite.
* Small dialect differences (``FOR UPDATE``, advisory locks) live here so
  service code stays dialect-neutral.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import re
from contextlib import asynccontextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any, AsyncIterator, Mapping, Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import databases

Row = Mapping[str, Any]

# The task that is inside a write transaction, so its nested ``transaction()``
# calls become savepoints instead of deadlocking on the lock. Tasks spawned
# from inside inherit the variable but are not that task, so they still lock.
_write_tx_owner: contextvars.ContextVar[asyncio.Task | None] = contextvars.ContextVar(
    "orbchain_write_tx_owner", default=None
)


def _in_write_tx() -> bool:
    owner = _write_tx_owner.get()
    return owner is not None and owner is asyncio.current_task()

SQLITE_BUSY_TIMEOUT_SECONDS = 30


class Database:
    """Async access to the gateway's database, identical on both dialects."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.dialect = "postgresql" if url.startswith("postgres") else "sqlite"
        options: dict[str, Any] = {}
        if self.is_sqlite:
            options["timeout"] = SQLITE_BUSY_TIMEOUT_SECONDS
        else:
            url, schema = _split_schema(url)
            query = urlsplit(url).query
            if "min_size" not in query:
                options["min_size"] = 1
            if "max_size" not in query:
                options["max_size"] = 20
            if schema:
                # A dedicated schema (operators, and one per test) via search_path.
                options["server_settings"] = {"search_path": schema}
        self._db = databases.Database(url, **options)
        if self.is_sqlite:
            backend = self._db._backend  # the library has no pool for SQLite; give it one
            backend._pool = _ReusingSQLitePool(backend._pool)
        self._write_lock = asyncio.Lock()

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
        if self.is_sqlite:
            path = self._db.url.database
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
        await self._db.connect()
        if self.is_sqlite:
            # WAL lets readers proceed while the single writer commits.
            await self._db.execute("PRAGMA journal_mode=WAL")
            await self._db.execute(
                "CREATE TABLE IF NOT EXISTS _writer_lock (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)"
            )
            await self._db.execute("INSERT OR IGNORE INTO _writer_lock (id, n) VALUES (1, 0)")

    async def disconnect(self) -> None:
        await self._db.disconnect()
        if self.is_sqlite:
            await self._db._backend._pool.close()

    # -- queries ---------------------------------------------------------------

    async def fetch_one(self, query: str, values: Mapping[str, Any] | None = None) -> Row | None:
        row = await self._db.fetch_one(query, dict(values or {}))
        return None if row is None else dict(row._mapping)

    async def fetch_all(self, query: str, values: Mapping[str, Any] | None = None) -> list[Row]:
        rows = await self._db.fetch_all(query, dict(values or {}))
        return [dict(row._mapping) for row in rows]

    async def fetch_val(self, query: str, values: Mapping[str, Any] | None = None) -> Any:
        return await self._db.fetch_val(query, dict(values or {}))

    async def execute(self, query: str, values: Mapping[str, Any] | None = None) -> Any:
        """Run one statement; outside a transaction a write takes the writer lock."""
        if self.is_sqlite and not _in_write_tx():
            async with self.transaction():
                return await self._db.execute(query, dict(values or {}))
        return await self._db.execute(query, dict(values or {}))

    async def execute_many(self, query: str, values: Sequence[Mapping[str, Any]]) -> None:
        async with self.transaction():
            await self._db.execute_many(query, [dict(v) for v in values])

    # -- transactions ------------------------------------------------------------

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """A write transaction; nested calls in the same task become savepoints."""
        if _in_write_tx():
            async with self._db.transaction():
                yield
            return
        if self.is_sqlite:
            async with self._write_lock:
                token = _write_tx_owner.set(asyncio.current_task())
                try:
                    async with self._db.transaction():
                        # Claim SQLite's write lock before reading anything.
                        await self._db.execute("UPDATE _writer_lock SET n = n + 1 WHERE id = 1")
                        yield
                finally:
                    _write_tx_owner.reset(token)
        else:
            token = _write_tx_owner.set(asyncio.current_task())
            try:
                async with self._db.transaction():
                    yield
            finally:
                _write_tx_owner.reset(token)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[None]:
        """Pin one connection to the current task (fewer connects per request)."""
        async with self._db.connection():
            yield

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
        session advisory lock on a pinned connection; SQLite deployments are
        single-process, so the lock is always granted.
        """
        if not self.is_postgres:
            yield True
            return
        key = _advisory_key(name)
        async with self._db.connection() as conn:
            got = await conn.fetch_val("SELECT pg_try_advisory_lock(:k)", {"k": key})
            try:
                yield bool(got)
            finally:
                if got:
                    await conn.execute("SELECT pg_advisory_unlock(:k)", {"k": key})


class _ReusingSQLitePool:
    """Keeps idle aiosqlite connections for the next task.

    ``databases`` opens a new SQLite connection (a file handle and a thread)
    for every task that queries; reusing idle ones makes a request's first
    query about as cheap as its others. A connection returns to the pool only
    outside a transaction.
    """

    def __init__(self, inner: Any, size: int = 16) -> None:
        self._inner = inner
        self._idle: list[Any] = []
        self._size = size

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)  # e.g. ``_memref``, read by the backend

    async def acquire(self) -> Any:
        if self._idle:
            return self._idle.pop()
        return await self._inner.acquire()

    async def release(self, connection: Any) -> None:
        if len(self._idle) < self._size and not connection.in_transaction:
            self._idle.append(connection)
        else:
            await self._inner.release(connection)

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            await self._inner.release(connection)


def _split_schema(url: str) -> tuple[str, str | None]:
    """Remove a ``schema=<name>`` query option from a PostgreSQL URL."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in pairs if k == "schema"), None)
    if schema is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", schema):
        raise ValueError("database URL option 'schema' must be a plain SQL identifier")
    rest = urlencode([(k, v) for k, v in pairs if k != "schema"])
    return urlunsplit(parts._replace(query=rest)), schema


def _advisory_key(name: str) -> int:
    """A stable signed 63-bit key for ``pg_try_advisory_lock``."""
    digest = hashlib.sha256(f"orbchain:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True) >> 1
