"""APScheduler 3.x wiring: runs every job plugins registered, one leader per job.

Each run of a job first takes a PostgreSQL advisory lock named after the
job, so with several ``orbchain serve`` processes on one database a periodic
job runs in exactly one of them at a time; on SQLite (one process) the lock
is always granted. A failing run is logged and retried at the next tick.
Every run that took the lock is counted in the job metrics (runs, failures, duration).

On a stop (core/infra/stopping.py) ``JobScheduler.drain`` starts no new run, lets
the runs in flight finish until the stop's deadline and cancels the rest:
every job is idempotent and resumable, so a cancelled run is simply done
again, whole, by the next one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from ..core.contract.registries import Job
from ..core.infra.stopping import CANCEL_SECONDS

if TYPE_CHECKING:  # pragma: no cover
    from ..core.gateway import Gateway

log = logging.getLogger(__name__)


async def run_job_once(gateway: "Gateway", job: Job) -> bool:
    """Run ``job`` if this process wins its lock; returns whether it ran."""
    async with gateway.db.connection(), gateway.db.advisory_lock(f"job:{job.name}") as leader:
        if not leader:
            return False
        started, failed = time.perf_counter(), False
        try:
            await job.func(gateway)
        except Exception:  # keep the scheduler alive
            failed = True
            log.exception("job %s failed; it runs again at the next tick", job.name)
        gateway.metrics.job_finished(job.name, time.perf_counter() - started, failed)
        return True


class JobScheduler:
    """APScheduler's interval triggers, plus what a stop needs: the runs in flight, by job name."""

    def __init__(self, gateway: "Gateway") -> None:
        self.gateway = gateway
        self._scheduler = AsyncIOScheduler(timezone="UTC")
        self._runs: dict[asyncio.Task, str] = {}  # runs in flight -> job name
        self._stopping = False
        self._shut_down = False

    def start(self) -> None:
        for job in self.gateway.jobs:
            self._scheduler.add_job(
                self._run,
                "interval",
                seconds=job.seconds,
                args=(job,),
                id=job.name,
                name=job.name,
                max_instances=1,
                coalesce=True,
                misfire_grace_time=max(1, int(job.seconds)),
            )
        self._scheduler.start()
        log.info("scheduler started with %d job(s): %s", len(self.gateway.jobs), ", ".join(self.gateway.jobs.names()))

    async def _run(self, job: Job) -> bool | None:
        """One run of ``job``, known to ``drain`` while it lasts: ``run_job_once``'s answer (whether this
        process led it), None when the stop began before it or cancelled it."""
        if self._stopping:
            return None  # a tick already due when the stop began
        task = asyncio.current_task()
        assert task is not None
        self._runs[task] = job.name
        try:
            return await run_job_once(self.gateway, job)
        except asyncio.CancelledError:
            if not self._stopping:
                raise
            return None  # cancelled by ``drain``, which reports it: no traceback from APScheduler for it
        finally:
            del self._runs[task]

    @property
    def running(self) -> list[str]:
        """Names of the jobs running now."""
        return sorted(self._runs.values())

    async def drain(self) -> list[str]:
        """Start no run any more; let runs in flight finish until the stop's deadline, then cancel them.

        Returns the names of the jobs cancelled (each already unwound, its
        connections and claims given back, unless one ignored the
        cancellation for ``CANCEL_SECONDS``). Begins the gateway's stop when
        nothing did (the app closes without a signal, as in tests). Safe to
        call again.
        """
        stop = self.gateway.stop
        stop.begin("the app is closing")
        if not self._stopping:
            self._stopping = True
            if self._scheduler.running:
                self._scheduler.pause()
        running = dict(self._runs)
        if running:
            await asyncio.wait(running, timeout=stop.remaining())
        late = [task for task in running if not task.done()]
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late, timeout=CANCEL_SECONDS)
        if self._scheduler.running and not self._shut_down:
            self._shut_down = True  # APScheduler shuts down at the loop's next turn: once only
            self._scheduler.shutdown(wait=False)  # nothing of ours is left for it to cancel
        cancelled = sorted(running[task] for task in late)
        stop.cancelled.extend(f"job {name}" for name in cancelled)
        return cancelled

    async def shutdown(self) -> None:
        await self.drain()

    @property
    def job_ids(self) -> list[str]:
        return [job.id for job in self._scheduler.get_jobs()]
