"""Fixed one-minute windows of request counts, per bucket (principal or IP).

Which bucket a request counts in is the web layer's business (web/auth.py,
rules in docs/decisions.md); this module only counts.

One process on SQLite keeps counts in memory; several processes on
PostgreSQL must share them, so the PostgreSQL limiter counts in a table with
one atomic upsert per request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Protocol

from .db import Database

WINDOW_SECONDS = 60


@dataclass(frozen=True)
class Decision:
    allowed: bool
    remaining: int
    retry_after: int  # seconds until the window resets


class RateLimiter(Protocol):
    async def hit(self, bucket: str, limit: int) -> Decision: ...


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
        start, retry_after = _window(self._clock())
        if start != self._window_start:
            self._counts.clear()
            self._window_start = start
        count = self._counts.get(bucket, 0) + 1
        self._counts[bucket] = count
        return Decision(count <= limit, max(0, limit - count), retry_after)


class DatabaseRateLimiter:
    """Counts in ``rate_limit_hits``, shared by every process on the database."""

    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock
        self._last_cleanup = 0

    async def hit(self, bucket: str, limit: int) -> Decision:
        start, retry_after = _window(self._clock())
        count = await self._db.fetch_val(
            "INSERT INTO rate_limit_hits (bucket, window_start, hits) VALUES (:b, :w, 1)"
            " ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_limit_hits.hits + 1"
            " RETURNING hits",
            {"b": bucket, "w": start},
        )
        if start - self._last_cleanup >= 10 * WINDOW_SECONDS:
            self._last_cleanup = start
            await self._db.execute("DELETE FROM rate_limit_hits WHERE window_start < :w", {"w": start - WINDOW_SECONDS})
        return Decision(count <= limit, max(0, limit - count), retry_after)


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


def limiter_for(db: Database, clock: Callable[[], float] = time.time) -> RateLimiter:
    return DatabaseRateLimiter(db, clock) if db.is_postgres else MemoryRateLimiter(clock)
