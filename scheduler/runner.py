"""APScheduler 3.x wiring: runs every job plugins registered, one leader per job.

Each run of a job first takes a PostgreSQL advisory lock named after the
job, so with several ``orbchain serve`` processes on one database a periodic
job runs in exactly one of them at a time; on SQLite (one process) the lock
is always granted. A failing run is logged and retried at the next tick.
Every run that took the lock is counted in the job metrics (runs, failures, duration).
A tick also claims the job's ``job_ticks`` row (PostgreSQL): however many
processes tick, a job runs about once per interval across them all, not
once per process (migrations/m0021_job_ticks.py).

``JobScheduler.wake(name)`` runs a job now instead of at its next tick: the
scheduler hears the ``wake`` signal (core/infra/signals.py) in every process,
and the run goes through the same lock, so whichever process leads the job
runs it. In one process a job's runs never overlap: a wake during a run asks
for exactly one more run after it (what was announced mid-run is scanned at
once, not at the next tick), a tick during a woken run is skipped.

On a stop (core/infra/stopping.py) ``JobScheduler.drain`` starts no new run, lets
the runs in flight finish until the stop's deadline and cancels the rest:
every job is idempotent and resumable, so a cancelled run is simply done
again, whole, by the next one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from ..core.contract.registries import Job
from ..core.infra.db_faults import unavailable_cause
from ..core.infra.signals import WAKE
from ..core.infra.stopping import CANCEL_SECONDS

if TYPE_CHECKING:  # pragma: no cover
    from ..core.gateway import Gateway

log = logging.getLogger(__name__)


# A tick runs when the job's last tick in any process started at least this share of its interval ago:
# one process's own ticks, a little late or early, still always run; another process's, a moment later, do not.
TICK_SHARE = 0.8
_CLAIM_TICK = """INSERT INTO job_ticks (name, started_at) VALUES (:name, clock_timestamp())
ON CONFLICT (name) DO UPDATE SET started_at = clock_timestamp()
WHERE job_ticks.started_at <= clock_timestamp() - make_interval(secs => :seconds)
RETURNING name"""


async def run_job_once(gateway: "Gateway", job: Job, *, tick: bool = False) -> bool:
    """Run ``job`` if this process wins its lock (and, for a ``tick``, the interval is due); returns whether it ran.

    A woken run or a direct call skips the interval check: it was asked for now. The lock lives in the
    run's database session: when the database restarts or the session is killed, the lock goes with it
    and the next tick, in whichever process asks first, elects a leader again. A run that met the
    database away is reported to ``gateway.db_outage`` (one log line per outage), not logged with a
    traceback per tick.
    """
    try:
        async with gateway.db.connection(), gateway.db.advisory_lock(f"job:{job.name}") as leader:
            if not leader:
                return False
            if tick and gateway.db.is_postgres and await gateway.db.fetch_one(
                    _CLAIM_TICK, {"name": job.name, "seconds": float(job.seconds) * TICK_SHARE}) is None:
                return False  # another process ran this interval's tick
            started, failed = time.perf_counter(), False
            try:
                await job.func(gateway)
            except Exception as exc:  # keep the scheduler alive
                failed = True
                if (cause := unavailable_cause(exc)) is None:
                    log.exception("job %s failed; it runs again at the next tick", job.name)
                else:
                    gateway.db_outage.failed(cause, f"job {job.name}")
            gateway.metrics.job_finished(job.name, time.perf_counter() - started, failed)
    except Exception as exc:
        if (cause := unavailable_cause(exc)) is None:
            raise
        gateway.db_outage.failed(cause, f"job {job.name}")  # the lock could not be asked for, or not given back
        return False
    if not failed:
        gateway.db_outage.answered()
    return True


def signing_job(job: Job) -> bool:
    """``orbchain signer``'s selection: only the jobs that sign (sweeps), which a seedless serve leaves to it."""
    return job.signs


class JobScheduler:
    """APScheduler's interval triggers, plus what a stop needs: the runs in flight, by job name."""

    def __init__(self, gateway: "Gateway", select: Callable[[Job], bool] | None = None) -> None:
        """``select``: the jobs this process runs; by default all but the signing ones when a separate signer
        holds the keys (``[signer] url``: ``orbchain signer`` runs those, with ``select=signing_job``)."""
        self.gateway = gateway
        separate = bool(gateway.config.signer.url)
        self.select = select or (lambda job: not (separate and job.signs))
        self._scheduler = AsyncIOScheduler(timezone="UTC")
        self._runs: dict[asyncio.Task, str] = {}  # runs in flight -> job name
        self._again: set[str] = set()  # jobs woken during their run: one more run when it ends
        self._unknown: set[str] = set()  # wakes naming no job, logged once each
        self._unsubscribe: Callable[[], None] | None = None
        self._stopping = False
        self._shut_down = False

    def start(self) -> None:
        for job in self.jobs():
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
        self._unsubscribe = self.gateway.signals.subscribe(WAKE, self.wake)
        names = [job.name for job in self.jobs()]
        log.info("scheduler started with %d job(s): %s", len(names), ", ".join(names))
        left = [job.name for job in self.gateway.jobs if not self.select(job)]
        if left:
            log.info("jobs left to another process (they sign: `orbchain signer` runs them): %s", ", ".join(left))

    def jobs(self) -> list[Job]:
        return [job for job in self.gateway.jobs if self.select(job)]

    def wake(self, name: str) -> None:
        """Run job ``name`` now (in this process if it wins the job's lock); the ``wake`` signal's subscriber.

        While a run of it is in flight here, exactly one more run follows that
        one, however many wakes came. Ignored once the stop began; a name no
        job has is logged once and ignored (a signal from a process with other
        plugins, or a typo).
        """
        if self._stopping:
            return
        job = self.gateway.jobs.get(name)
        if job is not None and not self.select(job):
            return  # another process runs it (the signer), and heard the same wake
        if job is None:
            if name not in self._unknown:
                self._unknown.add(name)
                log.warning("wake for unknown job %r ignored", name)
            return
        if name in self._runs.values():
            self._again.add(name)
            return
        self._start(job)

    def _start(self, job: Job) -> None:
        """A woken run, known to ``wake`` and ``drain`` from now on (before its task first runs)."""
        task = asyncio.get_running_loop().create_task(self._run(job), name=f"orbchain-wake-{job.name}")
        self._runs[task] = job.name
        task.add_done_callback(self._woken_done)

    def _woken_done(self, task: asyncio.Task) -> None:
        """No one awaits a woken run: forget it even if cancelled before it started, and log what it raised
        outside the job (APScheduler does that for ticks)."""
        self._runs.pop(task, None)
        if not task.cancelled() and task.exception() is not None:
            log.error("woken run of %s failed", task.get_name(), exc_info=task.exception())

    async def _run(self, job: Job) -> bool | None:
        """One run of ``job``, known to ``drain`` while it lasts: ``run_job_once``'s answer (whether this
        process led it), None when the stop began before it or cancelled it; False for a tick skipped
        because a woken run of the job is in flight here."""
        task = asyncio.current_task()
        assert task is not None
        tick = task not in self._runs
        if tick:  # APScheduler's own task
            if self._stopping:
                return None  # a tick already due when the stop began
            if job.name in self._runs.values():
                return False  # a woken run is doing it right now
            self._runs[task] = job.name
        try:
            if self._stopping:
                return None  # woken just before the stop began
            return await run_job_once(self.gateway, job, tick=tick)
        except asyncio.CancelledError:
            if not self._stopping:
                raise
            return None  # cancelled by ``drain``, which reports it: no traceback from APScheduler for it
        finally:
            self._runs.pop(task, None)
            if job.name in self._again:
                self._again.discard(job.name)
                if not self._stopping:
                    self._start(job)

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
            if self._unsubscribe is not None:
                self._unsubscribe()
            self._again.clear()
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
