"""Fixed one-minute windows of request counts, per bucket (principal or IP).

Which bucket a request counts in is the web layer's business (web/auth.py,
rules in docs/decisions.md); this module only counts.

One process on SQLite keeps counts in memory; several processes on
PostgreSQL must share them without a database write per request, so each
counts in memory and syncs its counts in one batched statement every
``SYNC_SECONDS`` (``SyncedRateLimiter``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol
from ..types.services import ServiceKey

log = logging.getLogger(__name__)

WINDOW_SECONDS = 60
SYNC_SECONDS = 0.5
STALE_SECONDS = 2 * SYNC_SECONDS
NODE_ALIVE_SECONDS = 5  # a process whose heartbeat (core/infra/pg_side.py) is older is gone


@dataclass(frozen=True)
class Decision:
    allowed: bool
    remaining: int
    retry_after: int  # seconds until the window resets


class RateLimiter(Protocol):
    async def hit(self, bucket: str, limit: int) -> Decision: ...

    def hit_now(self, bucket: str, limit: int) -> Decision | None:
        """``hit`` without awaiting when it can decide from memory (nearly always); None: await ``hit``."""


RATE_LIMITER = ServiceKey[RateLimiter]("rate_limiter")  # the process's limiter (core/accounts/coordination.py)


def _window(now: float) -> tuple[int, int]:
    start = int(now) - int(now) % WINDOW_SECONDS
    return start, max(1, start + WINDOW_SECONDS - int(now))


class MemoryRateLimiter:
    """Counts in a dict; old windows are dropped as time moves on."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._counts: dict[str, int] = {}
        self._window_start = 0

    async def hit(self, bucket: str, limit: int) -> Decision:
        return self.hit_now(bucket, limit)

    def hit_now(self, bucket: str, limit: int) -> Decision:
        start, retry_after = _window(self._clock())
        if start != self._window_start:
            self._counts.clear()
            self._window_start = start
        count = self._counts.get(bucket, 0) + 1
        self._counts[bucket] = count
        return Decision(count <= limit, max(0, limit - count), retry_after)


class SyncedRateLimiter:
    """Counts in memory; every ``SYNC_SECONDS`` one statement adds this process's counts to
    ``rate_limit_hits`` and reads back the global counts of the buckets it touched.

    No request writes to the database. Between syncs a process admits at
    most its share of a bucket's remaining budget as of its last sync,
    ``ceil((limit - global) / N)`` for N live processes (``gateway_nodes``);
    when that share is spent and the budget may not be, the request waits for
    a sync (one in flight, shared by every waiting request) instead of being
    refused. Over-admission is bounded: see docs/decisions.md, "Rate limits
    across processes". One process alone counts exactly.
    """

    def __init__(self, side: Any, clock: Callable[[], float] = time.time,
                 wall: Callable[[], float] = time.time, mono: Callable[[], float] = time.monotonic) -> None:
        self._side = side  # core/pg_side.SideConnection
        self._clock = clock
        self._wall = wall
        self._window_start = 0
        self._known: dict[str, int] = {}  # global count at this process's last sync
        self._pending: dict[str, int] = {}  # admitted here since then
        self._share: dict[str, int] = {}  # still admissible here before the next sync
        self._synced_at: dict[str, float] = {}  # monotonic time of the last sync that carried the bucket
        self._wanted: set[str] = set()  # buckets to read back on the next sync
        self._mono = mono  # how old the last sync is (STALE_SECONDS); tests move it instead of sleeping
        self._nodes = 1
        self._sync: asyncio.Task | None = None
        self._last_cleanup = 0

    def _roll(self, start: int) -> None:
        if start != self._window_start:
            self._window_start = start
            self._known.clear()
            self._pending.clear()
            self._share.clear()
            self._synced_at.clear()
            self._wanted.clear()

    def _grant(self, bucket: str, limit: int) -> int:
        remaining = limit - self._known.get(bucket, 0) - self._pending.get(bucket, 0)
        return max(0, -(-remaining // self._nodes))

    def hit_now(self, bucket: str, limit: int) -> Decision | None:
        """The decision from this process's counts, or None when a sync must come first."""
        start, retry_after = _window(self._clock())
        self._roll(start)
        if self._mono() - self._synced_at.get(bucket, float("-inf")) > STALE_SECONDS:
            return None
        if bucket not in self._share:
            self._share[bucket] = self._grant(bucket, limit)
        used = self._known.get(bucket, 0) + self._pending.get(bucket, 0)
        if used >= limit:
            return Decision(False, 0, retry_after)
        if self._share[bucket] <= 0:
            return None
        self._share[bucket] -= 1
        self._pending[bucket] = self._pending.get(bucket, 0) + 1
        return Decision(True, max(0, limit - used - 1), retry_after)

    async def hit(self, bucket: str, limit: int) -> Decision:
        decision = self.hit_now(bucket, limit)
        if decision is not None:
            return decision
        start, retry_after = _window(self._clock())
        self._roll(start)
        for _ in range(4):
            if self._mono() - self._synced_at.get(bucket, float("-inf")) > STALE_SECONDS:
                # Counts older than two syncs (a bucket idle here, perhaps busy elsewhere): ask first.
                self._share.pop(bucket, None)
            elif bucket not in self._share:  # granted only from fresh counts
                self._share[bucket] = self._grant(bucket, limit)
            if bucket in self._share:
                used = self._known.get(bucket, 0) + self._pending.get(bucket, 0)
                if self._share[bucket] > 0 or used >= limit:
                    break
            self._wanted.add(bucket)  # our share is spent (the budget may not be), or counts are stale
            await self.sync()
            self._roll(start)
        used = self._known.get(bucket, 0) + self._pending.get(bucket, 0)
        if self._share.get(bucket, 0) <= 0 or used >= limit:
            return Decision(False, 0, retry_after)
        self._share[bucket] -= 1
        self._pending[bucket] = self._pending.get(bucket, 0) + 1
        return Decision(True, max(0, limit - used - 1), retry_after)

    async def sync(self) -> None:
        """Push pending counts and read the global ones back; concurrent callers share one round trip."""
        if self._sync is None or self._sync.done():
            self._sync = asyncio.ensure_future(self._push())
        await asyncio.shield(self._sync)

    async def _push(self) -> None:
        start = self._window_start
        pending, self._pending = self._pending, {}
        wanted, self._wanted = self._wanted, set()
        buckets = list(pending.keys() | wanted)
        if not buckets:
            return
        try:
            rows = await self._side.fetch(_SYNC_SQL, buckets, [pending.get(b, 0) for b in buckets], start,
                                          int(self._wall()) - NODE_ALIVE_SECONDS)
        except Exception as exc:  # noqa: BLE001 - keep counting locally; retried next sync
            log.warning("rate-limit sync failed, counting locally: %s", exc)
            if start == self._window_start:
                for bucket, hits in pending.items():
                    self._pending[bucket] = self._pending.get(bucket, 0) + hits
                for bucket in buckets:  # the local count alone decides until a sync works
                    self._share[bucket] = 1 << 30
                    self._synced_at[bucket] = self._mono()
            return
        if start != self._window_start:
            return  # the window ended while we were away; its counts no longer matter
        synced = self._mono()
        for row in rows:
            self._nodes = max(1, int(row["nodes"]))
            self._known[row["bucket"]] = int(row["hits"])
            self._synced_at[row["bucket"]] = synced
            self._share.pop(row["bucket"], None)  # granted afresh on the next hit
        if start - self._last_cleanup >= 10 * WINDOW_SECONDS:
            self._last_cleanup = start
            try:
                await self._side.fetch("DELETE FROM rate_limit_hits WHERE window_start < $1", start - WINDOW_SECONDS)
                await self._side.fetch("DELETE FROM gateway_nodes WHERE seen < $1",
                                       int(self._wall()) - 10 * WINDOW_SECONDS)
            except Exception as exc:  # noqa: BLE001 - old rows only cost space; next time
                log.warning("rate-limit cleanup failed: %s", exc)

    async def run(self) -> None:
        """Sync every ``SYNC_SECONDS`` while anything is pending (a task of the app's lifetime)."""
        while True:
            await asyncio.sleep(SYNC_SECONDS)
            if self._pending or self._wanted:
                await self.sync()


_SYNC_SQL = """
WITH up AS (
    INSERT INTO rate_limit_hits (bucket, window_start, hits)
    SELECT b, $3, d FROM unnest($1::text[], $2::int[]) AS t(b, d)
    ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_limit_hits.hits + EXCLUDED.hits
    RETURNING bucket, hits
)
SELECT bucket, hits, (SELECT count(*) FROM gateway_nodes WHERE seen >= $4) AS nodes FROM up
"""


class Blocks:
    """Buckets known to be over their limit, per process, until their window ends.

    Once a client IP has failed authentication too often, its further
    credentialed requests are refused before any key or token is looked up,
    without another count. Each process learns it from its own ``hit``
    (shared counts on PostgreSQL make that the next failure it sees).
    """

    MAX_ENTRIES = 100_000

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._until: dict[str, float] = {}

    def __len__(self) -> int:
        """Buckets blocked now or until their next look-up (0: nothing to look up)."""
        return len(self._until)

    def blocked_for(self, bucket: str) -> int:
        """Seconds ``bucket`` stays blocked; 0 when it is not."""
        until = self._until.get(bucket)
        if until is None:
            return 0
        left = until - self._clock()
        if left <= 0:
            del self._until[bucket]
            return 0
        return max(1, int(left))

    def block(self, bucket: str, seconds: int) -> None:
        now = self._clock()
        if len(self._until) >= self.MAX_ENTRIES:
            self._until = {b: u for b, u in self._until.items() if u > now}
        self._until[bucket] = now + seconds
