"""Whether a PostgreSQL URL keeps sessions, and the session advisory locks taken where sessions are kept.

Why: behind a pooler in transaction pooling mode (PgBouncer's
``pool_mode = transaction``) each transaction of one client connection may
run on another server session. Queries and transactions are fine there,
with asyncpg's named prepared statements turned off; but a session advisory
lock stays behind on whichever server session took it (and is never
unlocked), and a LISTEN hears nothing. The gateway therefore sends its
queries through the pooler and keeps what needs a session on
``[database] direct_url`` (docs/operations.md, "Behind a connection pooler").

``keeps_sessions`` judges by behaviour, as the app cannot see the pooler's
settings: a second client connection that begins a transaction on the
session the first one just used, or a first one whose next statement runs
on another session, means sessions are not kept.
``SessionLocks`` holds the job leadership locks of one process on one
session of the direct URL.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from .config import ConfigError
from .db_hosts import connect as connect_hosts
from .pg_side import asyncpg_target

log = logging.getLogger(__name__)

PROBE_ROUNDS = 3
POOLER_SETTING = ("PgBouncer's pool_mode = transaction (or statement) does not keep a session per client; set"
                  " [database] direct_url (env ORBCHAIN_DATABASE_DIRECT_URL) to PostgreSQL itself or to a"
                  " pool_mode = session pool, for LISTEN/NOTIFY and the job leadership locks"
                  " (docs/operations.md, \"Behind a connection pooler\")")


async def keeps_sessions(dsn: str, settings: dict[str, str] | None = None) -> bool:
    """Whether each client connection of ``dsn`` stays on one server session (no transaction pooling).

    Judged once per process and address (a pooler's mode does not change under a running process;
    a probe costs two connections, about 0.1 s on a busy machine, and tests connect thousands of times).
    """
    address = urlunsplit(urlsplit(dsn)._replace(query=""))
    if address not in _VERDICTS:
        _VERDICTS[address] = await _probe(dsn, settings)
    return _VERDICTS[address]


_VERDICTS: dict[str, bool] = {}


async def _probe(dsn: str, settings: dict[str, str] | None) -> bool:
    first = await connect_hosts(dsn, statement_cache_size=0, server_settings=settings or None)
    try:
        second = await connect_hosts(dsn, statement_cache_size=0, server_settings=settings or None)
        try:
            return await _same_sessions(first, second)
        finally:
            await second.close()
    finally:
        await first.close()


async def _same_sessions(first: Any, second: Any) -> bool:
    pid = await first.fetchval("SELECT pg_backend_pid()")
    for _ in range(PROBE_ROUNDS):
        try:
            async with second.transaction():
                if await second.fetchval("SELECT pg_backend_pid()") == pid:
                    return False  # the first client's session went to the second one's transaction
        except asyncpg.PostgresError:  # statement pooling refuses transactions
            return False
        if await first.fetchval("SELECT pg_backend_pid()") != pid:
            return False  # the first client's next statement ran on another session
    return True


async def check_sessions(url: str, direct_url: str | None) -> bool:
    """Whether ``url`` is pooled per transaction; refuse (``ConfigError``) what the gateway cannot run under.

    Pooled without a direct URL, or a direct URL that is pooled too: the
    error names the setting. Behind the pooler a ``schema`` option (sent as
    a startup parameter PgBouncer drops or refuses) must be in force anyway.
    """
    dsn, settings = asyncpg_target(url)
    pooled = not await keeps_sessions(dsn, settings)
    if pooled and not direct_url:
        raise ConfigError(f"config key 'database.url' goes through a transaction pooler: {POOLER_SETTING}")
    if direct_url and not await keeps_sessions(*asyncpg_target(direct_url)):
        raise ConfigError(f"config key 'database.direct_url' goes through a transaction pooler too: {POOLER_SETTING}")
    schema = settings.get("search_path")
    if pooled and schema:
        conn = await connect_hosts(dsn, statement_cache_size=0, server_settings=settings)
        try:
            current = await conn.fetchval("SELECT current_schema()")
        finally:
            await conn.close()
        if current != schema:
            raise ConfigError(f"config key 'database.url' asks for schema {schema!r} but the pooler's sessions use"
                              f" {current!r}: set it on the role (ALTER ROLE ... SET search_path = {schema})")
    return pooled


class SessionLocks:
    """Session advisory locks of one process on one direct session, serialised; lost with that session.

    When the session drops, every lock it held is gone and another process
    may lead: the runs holding them are cancelled (jobs are idempotent and
    resumable, docs/decisions.md) and the next try reconnects.
    """

    def __init__(self, url: str) -> None:
        self._dsn, self._settings = asyncpg_target(url)
        self._conn: Any = None
        self._lock = asyncio.Lock()
        self._holders: dict[int, asyncio.Task | None] = {}

    async def _session(self) -> Any:
        if self._conn is None or self._conn.is_closed():
            conn = await connect_hosts(self._dsn, server_settings=self._settings or None)
            conn.add_termination_listener(self._lost)
            self._conn, self._holders = conn, {}
        return self._conn

    def _lost(self, conn: Any) -> None:
        if conn is not self._conn:
            return
        self._conn = None
        holders, self._holders = self._holders, {}
        for key, task in holders.items():
            log.warning("job lock session to PostgreSQL lost: lock %s released, its run is cancelled", key)
            if task is not None and not task.done():
                task.cancel()

    @asynccontextmanager
    async def held(self, key: int) -> AsyncIterator[bool]:
        """Yield whether this process now holds ``key`` (False when another process or task does)."""
        async with self._lock:
            if key in self._holders:
                got, conn = False, None  # another task of this process leads (the session lock is reentrant)
            else:
                conn = await self._session()
                got = bool(await conn.fetchval("SELECT pg_try_advisory_lock($1)", key))
                if got:
                    self._holders[key] = asyncio.current_task()
        try:
            yield got
        finally:
            if got:
                await self._unlock(conn, key)

    async def _unlock(self, conn: Any, key: int) -> None:
        async with self._lock:
            if conn is not self._conn or self._holders.pop(key, None) is None:
                return  # lost with its session
            try:
                await conn.execute("SELECT pg_advisory_unlock($1)", key)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                conn.terminate()  # the session ends, and its locks with it

    async def close(self) -> None:
        conn, self._conn, self._holders = self._conn, None, {}
        if conn is not None and not conn.is_closed():
            await conn.close()


@asynccontextmanager
async def waited_lock(url: str, key: int) -> AsyncIterator[None]:
    """Wait for session advisory lock ``key`` on a session of its own of ``url`` (closing it unlocks)."""
    dsn, settings = asyncpg_target(url)
    conn = await connect_hosts(dsn, server_settings=settings or None)
    try:
        await conn.execute("SELECT pg_advisory_lock($1)", key)
        yield
    finally:
        conn.terminate()
