"""One bounded pool for CPU-heavy work, so the event loop never runs it (issue 29).

The event loop serves every request of the process on one thread: 150 ms of
QR encoding there (``GET /tgapp/qr`` with 500 emoji) stalled ``/health`` and
every payment read behind it. Work that costs more than a few milliseconds
(QR images, password hashing, parsing a large request body) runs here
instead, on ``workers`` threads:

* scrypt (``hashlib``) and the C parts of json release the GIL, so they run
  beside the loop; segno's pure-Python encoding holds the GIL but yields it
  every switch interval, so with ``workers`` threads the loop keeps at least
  a ``1 / (workers + 1)`` share of the interpreter instead of none.
* At most ``workers + queue`` jobs are admitted at once (running plus
  waiting). Past that the caller gets :class:`PoolBusy` (503 ``unavailable``
  with ``Retry-After``) at once rather than a place in an ever longer line:
  an overload answers quickly and the memory stays bounded. A job counts
  until its thread finishes it, even when the request that asked for it has
  gone, so a flood of abandoned requests cannot slip past the bound.
* ``memo`` keeps results whose input repeats (a QR of the same address) in a
  bounded LRU per name, and callers asking for the same key while it is
  being computed share the one computation.

Sizes come from ``[server] cpu_workers`` and ``cpu_queue`` (docs/operations.md);
choices in docs/decisions.md, "CPU-heavy work off the event loop".
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Hashable, TypeVar

from .bounded import LruMap
from ..types.errors import ServiceUnavailable

T = TypeVar("T")

DEFAULT_WORKERS = 2
DEFAULT_QUEUE = 64
RETRY_AFTER_SECONDS = 1


class PoolBusy(ServiceUnavailable):
    """Every worker is busy and the waiting line is full: try again in a moment."""

    default_message = "server busy, try again shortly"

    def __init__(self) -> None:
        super().__init__(code="busy", headers={"Retry-After": str(RETRY_AFTER_SECONDS)})


class CpuPool:
    """``await pool.run(func, *args)``: ``func(*args)`` on a worker thread, admitted only while there is room."""

    def __init__(self, workers: int = DEFAULT_WORKERS, queue: int = DEFAULT_QUEUE) -> None:
        if workers < 1 or queue < 0:
            raise ValueError("a CPU pool has at least one worker and a queue of zero or more")
        self.workers = workers
        self.queue = queue
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()  # the count is released by worker threads
        self._admitted = 0
        self._memos: dict[str, LruMap[Hashable, Any]] = {}
        self._computing: dict[tuple[str, Hashable], asyncio.Future[Any]] = {}

    @property
    def capacity(self) -> int:
        """Jobs admitted at once: running plus waiting."""
        return self.workers + self.queue

    @property
    def admitted(self) -> int:
        """Jobs running or waiting now."""
        return self._admitted

    def _admit(self) -> None:
        with self._lock:
            if self._admitted >= self.capacity:
                raise PoolBusy()
            self._admitted += 1

    def _release(self, _: object = None) -> None:
        with self._lock:
            self._admitted -= 1

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="orbchain-cpu")
        return self._executor

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        """``func(*args)`` on a worker thread; :class:`PoolBusy` when ``capacity`` jobs are already in."""
        self._admit()
        try:
            job: Future[T] = self._pool().submit(func, *args)
        except BaseException:
            self._release()
            raise
        job.add_done_callback(self._release)  # when the thread is done with it (or it never started)
        return await asyncio.wrap_future(job)

    async def memo(self, name: str, size: int, key: Hashable, func: Callable[..., T], *args: Any) -> T:
        """``run(func, *args)``, kept under ``key`` in the LRU ``name`` of ``size`` entries.

        For results that are a function of ``key`` alone and hold no secret.
        Concurrent callers of one key share one computation; a failure
        (``PoolBusy`` included) is not kept, so the next caller tries again.
        """
        cache = self._memos.get(name)
        if cache is None:
            cache = self._memos[name] = LruMap(size)
        found = cache.get(key)
        if found is not None:
            return found
        pending = self._computing.get((name, key))
        if pending is None:
            pending = asyncio.ensure_future(self.run(func, *args))
            self._computing[(name, key)] = pending
            pending.add_done_callback(lambda done: self._settle(name, key, done))
        return await asyncio.shield(pending)

    def _settle(self, name: str, key: Hashable, done: asyncio.Future[Any]) -> None:
        self._computing.pop((name, key), None)
        if not done.cancelled() and done.exception() is None:
            self._memos[name].put(key, done.result())

    def cached(self, name: str) -> int:
        """Entries kept under ``name`` (for tests and metrics)."""
        cache = self._memos.get(name)
        return 0 if cache is None else len(cache)

    def shutdown(self) -> None:
        """Stop the threads (queued jobs are cancelled); the next ``run`` starts new ones."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
