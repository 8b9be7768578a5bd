"""One dedicated PostgreSQL connection per process, outside the request pool.

Why a connection of its own instead of ``core.infra.db.Database``: LISTEN needs a
session that stays open for the life of the process, and a pooled connection
is handed to requests. The rate limiter's batched sync and a heartbeat ride
on the same session, so neither takes a pool connection from a request.

Each process is a *node*: the heartbeat (every second) upserts its row in
``gateway_nodes``, so others can tell which processes are alive (the rate
limiter's share, core/accounts/auth_fanout.py's acknowledgements).

``healthy()`` is true only while the session is LISTENing and its last round
trip (the heartbeat) succeeded recently. PostgreSQL delivers a
notification committed before a query was sent ahead of that query's reply,
so a recent heartbeat proves nothing sent to the channel before it was lost.
Callers that cache on the strength of notifications (core/accounts/auth_cache.py)
trust their cache only while ``healthy()``; when the session drops they are
told (``on_reset``) and stop trusting until it is back and LISTENing again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import time
from typing import Any, Callable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg

from .db_hosts import connect as connect_hosts

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 1.0
STALE_AFTER_SECONDS = 3.0
RECONNECT_SECONDS = 1.0
# Query options of the gateway's URL that are not libpq's (asyncpg would send them as server settings).
_POOL_OPTIONS = {"min_size", "max_size", "schema", "force_rollback", "ssl"}


def asyncpg_target(url: str) -> tuple[str, dict[str, str]]:
    """The gateway's database URL as an asyncpg DSN plus server settings (``schema`` -> search_path)."""
    parts = urlsplit(url)
    scheme = parts.scheme.split("+", 1)[0]
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in pairs if k == "schema"), None)
    settings = {"search_path": schema} if schema else {}
    query = urlencode([(k, v) for k, v in pairs if k not in _POOL_OPTIONS])
    return urlunsplit(parts._replace(scheme=scheme, query=query)), settings


_BEAT_SQL = ("INSERT INTO gateway_nodes (node, seen) VALUES ($1, $2)"
             " ON CONFLICT (node) DO UPDATE SET seen = EXCLUDED.seen")


class SideConnection:
    """A self-healing session that LISTENs on ``channel`` and runs serialised side queries."""

    def __init__(self, url: str, channel: str, on_notify: Callable[[str], None], on_reset: Callable[[], None],
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time) -> None:
        self.node = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._wall = wall
        self._dsn, self._settings = asyncpg_target(url)
        self._channel = channel
        self._on_notify = on_notify
        self._on_reset = on_reset
        self._clock = clock
        self._conn: Any = None
        self._lock = asyncio.Lock()
        self._last_ok = float("-inf")  # float ok: a monotonic clock reading
        self._task: asyncio.Task | None = None
        self._closing = False
        self._more: dict[str, Callable[[str], None]] = {}

    def listen(self, channel: str, on_notify: Callable[[str], None]) -> None:
        """LISTEN on ``channel`` too (from the next connect on: call before ``start``)."""
        self._more[channel] = on_notify

    def healthy(self) -> bool:
        return self._conn is not None and self._clock() - self._last_ok < STALE_AFTER_SECONDS

    async def start(self) -> None:
        """Connect once (errors propagate: the process should not start half-wired), then keep alive."""
        await self._connect()
        self._task = asyncio.create_task(self._keepalive(), name="orbchain-pg-side")

    async def stop(self) -> None:
        self._closing = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        try:  # leave at once rather than be waited for until the row goes stale
            await self.fetch("DELETE FROM gateway_nodes WHERE node = $1", self.node)
        except Exception as exc:  # noqa: BLE001 - the row goes stale by itself
            log.info("could not remove node row: %s", exc)
        await self._drop()

    async def beat(self) -> None:
        """Record this process as alive (and prove the session answers)."""
        await self.fetch(_BEAT_SQL, self.node, int(self._wall()))

    async def fetch(self, query: str, *args: Any) -> list[Any]:
        """Run one statement on the side session; a failure drops the session (it reconnects)."""
        async with self._lock:
            conn = self._conn
            if conn is None:
                raise ConnectionError("side connection is down")
            try:
                rows = await conn.fetch(query, *args)
            except (OSError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError):
                await self._lost()
                raise
            self._last_ok = self._clock()
            return rows

    async def _connect(self) -> None:
        conn = await connect_hosts(self._dsn, server_settings=self._settings or None)
        conn.add_termination_listener(lambda _conn: asyncio.get_running_loop().create_task(self._lost()))
        await conn.add_listener(self._channel, self._notified)
        for channel, on_notify in self._more.items():
            await conn.add_listener(channel, lambda _c, _p, _ch, payload, cb=on_notify: cb(payload))
        await conn.execute(_BEAT_SQL, self.node, int(self._wall()))
        self._conn = conn
        # Anything sent while no session listened is unknown: start from nothing.
        self._on_reset()
        self._last_ok = self._clock()

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        self._on_notify(payload)

    async def _lost(self) -> None:
        if self._conn is None:
            return
        self._on_reset()
        await self._drop()

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        self._last_ok = float("-inf")  # float ok: a monotonic clock reading
        if conn is not None and not conn.is_closed():
            conn.terminate()

    async def _keepalive(self) -> None:
        down = False
        while not self._closing:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            try:
                if self._conn is None:
                    await self._connect()
                    if down:
                        log.info("side connection to PostgreSQL restored (LISTEN, rate-limit sync, heartbeat)")
                    down = False
                else:
                    await self.beat()
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, ConnectionError) as exc:
                if not down:  # once per outage: it retries every second until the server is back
                    log.warning("side connection to PostgreSQL down, retrying every %.0f s: %s",
                                RECONNECT_SECONDS + HEARTBEAT_SECONDS, exc)
                down = True
                await self._drop()
                await asyncio.sleep(RECONNECT_SECONDS)
