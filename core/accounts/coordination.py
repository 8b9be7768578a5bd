"""What one process shares with the others: rate-limit counts, credential-cache invalidation, signals.

On PostgreSQL a dedicated side connection (core/infra/pg_side.py, on ``[database] direct_url`` when the
gateway's URL is a transaction pooler: core/infra/pg_sessions.py) LISTENs for
credential changes (emptying the auth cache, core/accounts/auth_cache.py, and
acknowledging them, core/accounts/auth_fanout.py) and carries the rate limiter's
batched sync (core/infra/ratelimit.py) and the gateway's signals (core/infra/signals.py:
wake a scan, a payment changed). On SQLite, one process
by design, both stay in memory and the cache is invalidated in process.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import AsyncIterator

from .auth_cache import AUTH_CACHE, AUTH_FANOUT, CHANNEL, AuthCache
from .auth_fanout import AuthFanout
from ..infra.pg_side import SideConnection
from ..infra.ratelimit import RATE_LIMITER, MemoryRateLimiter, SyncedRateLimiter
from ..infra.signals import CHANNEL as SIGNAL_CHANNEL
from ..contract.gateway import PluginGateway as Gateway


@contextlib.asynccontextmanager
async def coordination(gateway: "Gateway") -> AsyncIterator[None]:
    """Install ``rate_limiter`` and ``auth_cache`` in ``gateway.services`` for the app's lifetime."""
    clock = lambda: gateway.clock()  # noqa: E731 - tests swap gateway.clock
    if not gateway.db.is_postgres:
        gateway.services[RATE_LIMITER] = MemoryRateLimiter(clock)
        gateway.services[AUTH_CACHE] = AuthCache()
        yield
        return
    cache = AuthCache(lambda: side.healthy())
    signals = gateway.signals

    def reset() -> None:
        cache.invalidate()
        signals.lost()

    side = SideConnection(gateway.db.session_url, CHANNEL, on_notify=lambda payload: fanout.notified(payload),
                          on_reset=reset)
    side.listen(SIGNAL_CHANNEL, signals.received)
    fanout = AuthFanout(side, cache)
    await side.start()
    signals.attach(lambda message: side.fetch("SELECT pg_notify($1, $2)", SIGNAL_CHANNEL, message))
    limiter = SyncedRateLimiter(side, clock)
    gateway.services[AUTH_CACHE] = cache
    gateway.services[AUTH_FANOUT] = fanout
    gateway.services[RATE_LIMITER] = limiter
    syncing = asyncio.create_task(limiter.run(), name="orbchain-rate-sync")
    try:
        yield
    finally:
        syncing.cancel()
        await asyncio.gather(syncing, return_exceptions=True)
        await limiter.sync()  # hand this process's last counts to the others
        await signals.detach()
        await fanout.close()
        gateway.services.pop(AUTH_FANOUT, None)
        await side.stop()
