"""The bounded CPU pool (core/infra/cpu_pool.py): work off the event loop, a bounded line, shared results.

Jobs here block on ``threading.Event`` s the test controls, so "busy" and
"waiting" are states the test sets up, never a timing it hopes for.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from orbchain.core.infra.config import ConfigError, load_config
from orbchain.core.infra.cpu_pool import CpuPool, PoolBusy
from orbchain.core.startup import build_gateway

HANG = 10  # seconds: only to turn a hang into a failure


@pytest.fixture
def pool():
    pool = CpuPool(workers=2, queue=1)
    yield pool
    pool.shutdown()


def blocker(started: threading.Semaphore, release: threading.Event, result: object = "done"):
    def job():
        started.release()
        assert release.wait(HANG)
        return result
    return job


async def acquired(started: threading.Semaphore, count: int) -> None:
    for _ in range(count):
        assert await asyncio.to_thread(started.acquire, True, HANG)


async def test_work_runs_on_a_pool_thread():
    pool = CpuPool()
    try:
        assert await pool.run(lambda: threading.current_thread().name) != threading.current_thread().name
    finally:
        pool.shutdown()


async def test_past_workers_plus_queue_the_caller_is_refused_at_once(pool):
    """Two running, one waiting, the fourth refused with 503 ``busy`` and Retry-After; afterwards room again."""
    started, release = threading.Semaphore(0), threading.Event()
    jobs = [asyncio.ensure_future(pool.run(blocker(started, release))) for _ in range(3)]
    await acquired(started, 2)  # both workers busy, the third job waits in the line
    assert pool.admitted == 3
    with pytest.raises(PoolBusy) as refused:
        await pool.run(lambda: "never")
    assert refused.value.status == 503 and refused.value.type == "unavailable"
    assert refused.value.code == "busy" and refused.value.headers["Retry-After"] == "1"
    release.set()
    assert await asyncio.wait_for(asyncio.gather(*jobs), HANG) == ["done"] * 3
    assert pool.admitted == 0
    assert await pool.run(lambda: 7) == 7


async def test_a_caller_that_leaves_still_holds_its_place_until_the_thread_is_done(pool):
    """Cancelling the awaiting request does not free the slot while the thread still works (no bound bypass)."""
    started, release = threading.Semaphore(0), threading.Event()
    running = [asyncio.ensure_future(pool.run(blocker(started, release))) for _ in range(2)]
    await acquired(started, 2)
    for job in running:
        job.cancel()
    await asyncio.gather(*running, return_exceptions=True)
    assert pool.admitted == 2  # the threads are still busy with them
    waiting = asyncio.ensure_future(pool.run(lambda: "queued"))
    await asyncio.sleep(0)  # one turn of the loop: the task starts and takes the last place
    assert pool.admitted == 3
    with pytest.raises(PoolBusy):
        await pool.run(lambda: "over")
    release.set()
    assert await asyncio.wait_for(waiting, HANG) == "queued"


async def test_memo_shares_one_computation_and_keeps_the_result(pool):
    started, release = threading.Semaphore(0), threading.Event()
    calls = []

    def render():
        calls.append(1)
        return blocker(started, release, "svg")()

    first = asyncio.ensure_future(pool.memo("qr", 4, "k", render))
    await acquired(started, 1)
    second = asyncio.ensure_future(pool.memo("qr", 4, "k", render))  # while the first is computing
    release.set()
    assert await asyncio.wait_for(asyncio.gather(first, second), HANG) == ["svg", "svg"]
    assert await pool.memo("qr", 4, "k", render) == "svg"
    assert len(calls) == 1 and pool.cached("qr") == 1


async def test_memo_does_not_keep_a_failure(pool):
    def boom():
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        await pool.memo("qr", 4, "k", boom)
    assert pool.cached("qr") == 0
    assert await pool.memo("qr", 4, "k", lambda: "ok") == "ok"


def test_the_pool_is_sized_by_the_config():
    config = load_config(None, environ={"ORBCHAIN_SERVER__CPU_WORKERS": "3", "ORBCHAIN_SERVER__CPU_QUEUE": "5"})
    gateway = build_gateway(config)
    assert (gateway.cpu.workers, gateway.cpu.queue, gateway.cpu.capacity) == (3, 5, 8)
    default = build_gateway(load_config(None, environ={})).cpu
    assert (default.workers, default.queue) == (2, 64)
    for bad in ({"ORBCHAIN_SERVER__CPU_WORKERS": "0"}, {"ORBCHAIN_SERVER__CPU_QUEUE": "-1"}):
        with pytest.raises(ConfigError, match="cpu_"):
            load_config(None, environ=bad)
