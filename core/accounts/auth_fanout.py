"""A credential change is over only when every live process has dropped its cache.

NOTIFY (core/accounts/auth_cache.py) reaches the other processes asynchronously: on a
busy machine the next request, sent by the client that just revoked a key,
could reach another process before the notification does. SPEC 4.9 allows
no propagation window, so the process making the change waits before it
answers:

1. the change commits (its trigger NOTIFYs ``orbchain_auth``);
2. this process sends a marker, ``ack:<token>``, on the same channel;
   PostgreSQL delivers notifications in commit order, so a process that sees
   the marker has already seen (and acted on) the change;
3. every process that sees a marker empties its cache (any notification
   does) and writes ``(token, node)`` to ``auth_acks``;
4. this process waits until every live node (``gateway_nodes``, heartbeat
   within 5 s) has acknowledged, at most ``WAIT_SECONDS``. A node that could
   not acknowledge within that time has had no successful heartbeat since the
   marker, so it stopped trusting its cache (core/infra/pg_side.py: 3 s) anyway.

Changes made outside the core's functions (psql, a plugin's own SQL) still
NOTIFY through the triggers but nobody waits for them.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from typing import Any, Callable

from .auth_cache import CHANNEL, AuthCache
from ..infra.pg_side import STALE_AFTER_SECONDS
from ..infra.ratelimit import NODE_ALIVE_SECONDS

log = logging.getLogger(__name__)

WAIT_SECONDS = STALE_AFTER_SECONDS + 0.5
POLL_SECONDS = 0.005
MARKER = "ack:"


class AuthFanout:
    def __init__(self, side: Any, cache: AuthCache, clock: Callable[[], float] = time.monotonic) -> None:
        self._side = side  # core/pg_side.SideConnection
        self._cache = cache
        self._clock = clock  # bounds the wait (WAIT_SECONDS); tests move it instead of waiting
        self._acks: set[asyncio.Task] = set()

    def notified(self, payload: str) -> None:
        """Any notification empties the cache; a marker is acknowledged after that."""
        self._cache.invalidate()
        if payload.startswith(MARKER):
            task = asyncio.get_running_loop().create_task(self._ack(payload[len(MARKER):]))
            self._acks.add(task)
            task.add_done_callback(self._acks.discard)

    async def _ack(self, token: str) -> None:
        try:
            await self._side.fetch("INSERT INTO auth_acks (token, node, at) VALUES ($1, $2, $3)"
                                   " ON CONFLICT DO NOTHING", token, self._side.node, int(time.time()))
        except Exception as exc:  # noqa: BLE001 - the waiter times out; our cache is already empty
            log.warning("could not acknowledge a credential change: %s", exc)

    async def propagate(self) -> None:
        """Return once every live process has dropped what it cached before the change."""
        token = secrets.token_hex(8)
        started = self._clock()
        try:
            await self._side.fetch("SELECT pg_notify($1, $2)", CHANNEL, MARKER + token)
            while True:
                missing = await self._side.fetch(
                    "SELECT node FROM gateway_nodes WHERE seen >= $1"
                    " AND node NOT IN (SELECT node FROM auth_acks WHERE token = $2)",
                    int(time.time()) - NODE_ALIVE_SECONDS, token)
                if not missing:
                    break
                if self._clock() - started > WAIT_SECONDS:
                    log.warning("credential change not acknowledged by %s; their caches expired unused",
                                ", ".join(r["node"] for r in missing))
                    break
                await asyncio.sleep(POLL_SECONDS)
            await self._side.fetch("DELETE FROM auth_acks WHERE token = $1 OR at < $2", token,
                                   int(time.time()) - 60)
        except Exception as exc:  # noqa: BLE001 - no side connection: wait out every cache's trust instead
            log.warning("could not confirm a credential change with the other processes: %s", exc)
            await asyncio.sleep(max(0.0, WAIT_SECONDS - (self._clock() - started)))

    async def close(self) -> None:
        for task in list(self._acks):
            task.cancel()
        await asyncio.gather(*self._acks, return_exceptions=True)
