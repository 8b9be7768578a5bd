"""Rate limits shared by several processes without a database write per request (issue 11).

Two limiters on one PostgreSQL database stand for two ``orbchain serve``
processes; the bound they must keep is in docs/decisions.md ("Rate limits
across processes"). On SQLite (one process) counts stay in memory.
Both clocks are the test's: no sleep decides what is synced.
"""

from __future__ import annotations

import asyncio
import math

from orbchain.core.accounts.coordination import coordination
from orbchain.core.infra.pg_side import SideConnection
from orbchain.core.infra.ratelimit import STALE_SECONDS, MemoryRateLimiter, SyncedRateLimiter

from .cross_process import CROSS_PROCESS

LIMIT = 60


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


async def _admitted(limiter, bucket: str, count: int) -> int:
    return sum([(await limiter.hit(bucket, LIMIT)).allowed for _ in range(count)])


async def _running_pair(url: str, clock: Clock, mono: Clock | None = None):
    """Two limiters as two processes would run them, each syncing every SYNC_SECONDS; and the statements sent."""
    statements: list[str] = []
    sides = [SideConnection(url, "orbchain_test_rl", lambda _payload: None, lambda: None) for _ in range(2)]
    for side in sides:
        await side.start()
        original = side.fetch

        async def counted(query, *args, _original=original):
            statements.append(query)
            return await _original(query, *args)

        side.fetch = counted
    limiters = [SyncedRateLimiter(side, clock, mono=mono or Clock()) for side in sides]
    tasks = [asyncio.create_task(limiter.run()) for limiter in limiters]
    return sides, limiters, tasks, statements


async def test_one_process_on_sqlite_counts_in_memory(gateway, db_url):
    if gateway.db.is_postgres:
        async with coordination(gateway):
            assert isinstance(gateway.services["rate_limiter"], SyncedRateLimiter)
        return
    async with coordination(gateway):
        assert isinstance(gateway.services["rate_limiter"], MemoryRateLimiter)


@CROSS_PROCESS
async def test_two_processes_share_a_bucket_within_the_stated_bound(gateway, db_url):
    """Counts admitted in either process are seen by both once synced and the local copy is stale.

    The sync is called, not waited for, and the monotonic clock is moved past
    STALE_SECONDS: break caught, a limiter that keeps deciding from stale
    counts (admits again after the budget is spent).
    """
    clock, mono = Clock(), Clock()
    clock.now -= clock.now % 60
    sides, (a, b), tasks, statements = await _running_pair(db_url, clock, mono)
    try:
        # Both processes have synced once, so each knows the other is there.
        await a.hit("warm-up", LIMIT), await b.hit("warm-up", LIMIT)
        await a.hit("warm-up", LIMIT)
        statements.clear()
        admitted = 0
        for _ in range(100):  # one client's requests spread over both processes
            admitted += (await a.hit("k", LIMIT)).allowed + (await b.hit("k", LIMIT)).allowed
        assert LIMIT <= admitted <= LIMIT + math.ceil(LIMIT / 2)  # docs/decisions.md
        assert len(statements) <= 30  # a few batched syncs for 200 requests, never one per request
        await a.sync(), await b.sync()  # every count admitted here is in the database
        mono.now += STALE_SECONDS + 1  # both copies are stale: the next hit reads the global count first
        assert not (await a.hit("k", LIMIT)).allowed and not (await b.hit("k", LIMIT)).allowed
        total = await gateway.db.fetch_val("SELECT hits FROM rate_limit_hits WHERE bucket = 'k'")
        assert total == admitted  # refused requests are not counted, admitted ones all are

        clock.now += 60  # a new window: the budget is back, and one process alone may use all of it
        assert await _admitted(a, "k", 100) == LIMIT
    finally:
        for task in tasks:
            task.cancel()
        for side in sides:
            await side.stop()


async def test_one_process_counts_exactly(gateway, db_url):
    clock = Clock()
    if gateway.db.is_postgres:
        side = SideConnection(db_url, "orbchain_test_rl", lambda _payload: None, lambda: None)
        await side.start()
        limiter = SyncedRateLimiter(side, clock)
    else:
        side, limiter = None, MemoryRateLimiter(clock)
    try:
        decisions = [await limiter.hit("x", 20) for _ in range(25)]
        assert [d.allowed for d in decisions] == [True] * 20 + [False] * 5
        assert decisions[0].remaining == 19 and decisions[19].remaining == 0
    finally:
        if side is not None:
            await side.stop()
