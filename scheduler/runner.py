"""APScheduler 3.x wiring: runs every job plugins registered, one leader per job.

Each run of a job first takes a PostgreSQL advisory lock named after the
job, so with several ``orbchain serve`` processes on one database a periodic
job runs in exactly one of them at a time; on SQLite (one process) the lock
is always granted. A failing run is logged and retried at the next tick.
Every run that took the lock is counted in the job metrics (runs, failures, duration).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from ..core.registries import Job

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
    def __init__(self, gateway: "Gateway") -> None:
        self.gateway = gateway
        self._scheduler = AsyncIOScheduler(timezone="UTC")

    def start(self) -> None:
        for job in self.gateway.jobs:
            self._scheduler.add_job(
                run_job_once,
                "interval",
                seconds=job.seconds,
                args=(self.gateway, job),
                id=job.name,
                name=job.name,
                max_instances=1,
                coalesce=True,
                misfire_grace_time=max(1, int(job.seconds)),
            )
        self._scheduler.start()
        log.info("scheduler started with %d job(s): %s", len(self.gateway.jobs), ", ".join(self.gateway.jobs.names()))

    async def shutdown(self) -> None:
        self._scheduler.shutdown(wait=False)

    @property
    def job_ids(self) -> list[str]:
        return [job.id for job in self._scheduler.get_jobs()]
