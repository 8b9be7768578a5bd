"""Scheduler: plugin jobs run inside the app's loop; one leader per job across processes on PostgreSQL;
a stop lets the runs in flight finish until its deadline and cancels the rest.

No sleep decides an outcome here: jobs report through events, and the only
time bound (``HANG_SECONDS``) catches a scheduler that never runs at all.
"""

from __future__ import annotations

import asyncio

from apscheduler.events import EVENT_JOB_EXECUTED

from orbchain.core.contract.plugins import get_plugin_manager, hookimpl
from orbchain.core.contract.registries import Job, JobRegistry
from orbchain.core.infra.stopping import Stop
from orbchain.scheduler.runner import JobScheduler, run_job_once
from orbchain.web.keys import GATEWAY

from .cross_process import CROSS_PROCESS, HANG_SECONDS


class TickPlugin:
    """A job every 100 ms that counts its runs and says when it has run ``wanted`` times."""

    PLUGIN_NAME = "tick"

    def __init__(self, wanted: int = 2):
        self.runs = 0
        self.wanted = wanted
        self.done = asyncio.Event()

    @hookimpl
    def register_jobs(self, registry):
        async def tick(gateway):
            self.runs += 1
            if self.runs >= self.wanted:
                self.done.set()

        registry.add("tick.every_100ms", tick, seconds=0.1)


async def test_plugin_jobs_run_while_the_app_serves(make_client, make_config):
    """Break caught: the app not starting its scheduler (or not adding plugin jobs) never sets ``done``."""
    plugin = TickPlugin()
    client = await make_client(make_config(), get_plugin_manager([plugin]))
    await asyncio.wait_for(plugin.done.wait(), HANG_SECONDS)
    assert plugin.runs >= 2
    assert "tick.every_100ms" in client.app[GATEWAY].services["scheduler"].job_ids


async def test_scheduler_can_be_disabled(make_client, make_config):
    """A disabled app runs nothing while an enabled twin (the control) runs its job twice.

    Break caught: ``scheduler.enabled = false`` ignored (the disabled plugin runs too).
    """
    quiet, control = TickPlugin(), TickPlugin()
    client = await make_client(make_config(scheduler={"enabled": False}), get_plugin_manager([quiet]))
    await make_client(make_config(), get_plugin_manager([control]))
    await asyncio.wait_for(control.done.wait(), HANG_SECONDS)
    assert quiet.runs == 0 and "scheduler" not in client.app[GATEWAY].services


async def test_a_failing_job_is_logged_and_survives(gateway, caplog):
    async def broken(gw):
        raise RuntimeError("job broke")

    assert await run_job_once(gateway, Job("broken.job", broken, 1)) is True
    assert "broken.job" in caplog.text


class HoldingPlugin:
    """A job that takes the leadership and holds it until the test lets go."""

    PLUGIN_NAME = "holding"

    def __init__(self, name: str, entered: list[str], started: asyncio.Event, release: asyncio.Event):
        self.name, self.entered, self.started, self.release = name, entered, started, release

    @hookimpl
    def register_jobs(self, registry):
        async def hold(gateway):
            self.entered.append(self.name)
            self.started.set()
            await self.release.wait()

        registry.add("holding.job", hold, seconds=0.05)


@CROSS_PROCESS
async def test_two_schedulers_elect_one_leader_per_job(make_client, make_config):
    """Two apps (two processes: own pools, own schedulers) on one database: exactly one runs the job.

    The leader holds the job until the other scheduler has fired it and been
    refused the advisory lock (its run returns False); only then is the
    leader released. Break caught: ``advisory_lock`` granting every caller
    (both enter the job: ``entered`` has two names, or the refusal never comes).
    """
    entered: list[str] = []
    started, release, refused = asyncio.Event(), asyncio.Event(), asyncio.Event()
    lost: list[str] = []
    config = make_config()
    apps = {}
    for name in ("a", "b"):
        plugin = HoldingPlugin(name, entered, started, release)
        apps[name] = await make_client(config, get_plugin_manager([plugin]))

    def listener_for(name):
        def heard(event):
            if event.job_id == "holding.job" and event.retval is False:
                lost.append(name)
                refused.set()
        return heard

    try:
        for name, client in apps.items():
            client.app[GATEWAY].services["scheduler"]._scheduler.add_listener(listener_for(name), EVENT_JOB_EXECUTED)
        await asyncio.wait_for(started.wait(), HANG_SECONDS)
        await asyncio.wait_for(refused.wait(), HANG_SECONDS)
        assert len(entered) == 1, entered
        leader = entered[0]
        assert lost and set(lost) == {"b" if leader == "a" else "a"}, (leader, lost)
    finally:
        release.set()


def _scheduler_with(gateway, drain_seconds: float, *jobs: Job) -> JobScheduler:
    """A scheduler running only ``jobs``, with a stop that drains for ``drain_seconds``."""
    gateway.jobs = JobRegistry()
    gateway.jobs.current_plugin = "test"
    for job in jobs:
        gateway.jobs.add(job)
    gateway.stop = Stop(drain_seconds)
    scheduler = JobScheduler(gateway)
    scheduler.start()
    return scheduler


async def test_a_stop_lets_a_running_job_finish_and_starts_no_new_run(gateway):
    """Issue 34: the scheduler was shut down with ``wait=False``, which cancels APScheduler's running jobs at
    once; a run in flight now finishes within the drain deadline, and a tick due after the stop began runs
    nothing."""
    started, release, finished = asyncio.Event(), asyncio.Event(), []

    async def slow(gw):
        started.set()
        await release.wait()
        finished.append("done")

    job = Job("test.slow", slow, 0.05)
    scheduler = _scheduler_with(gateway, 30, job)
    await asyncio.wait_for(started.wait(), HANG_SECONDS)
    draining = asyncio.create_task(scheduler.drain())
    release.set()
    assert await draining == [] and finished == ["done"] and gateway.stop.cancelled == []
    assert await scheduler._run(job) is None and finished == ["done"]  # a tick already due: nothing runs


async def test_a_stop_cancels_a_run_still_going_at_the_deadline(gateway):
    started, unwound = asyncio.Event(), []

    async def stuck(gw):
        started.set()
        try:
            await asyncio.Event().wait()  # a node that never answers
        except asyncio.CancelledError:
            unwound.append(True)  # e.g. giving back its claims
            raise

    scheduler = _scheduler_with(gateway, 0.2, Job("test.stuck", stuck, 0.05))
    await asyncio.wait_for(started.wait(), HANG_SECONDS)
    assert await scheduler.drain() == ["test.stuck"]
    assert unwound == [True] and gateway.stop.cancelled == ["job test.stuck"] and scheduler.running == []
    assert await scheduler.drain() == []  # again (the app's cleanup after its shutdown): nothing left


class Gate:
    """A job whose every run waits for the test to let it go, so wakes can arrive while it runs."""

    def __init__(self) -> None:
        self.runs = 0
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, gateway) -> None:
        self.runs += 1
        self.started.set()
        await self.release.wait()


async def _idle(scheduler: JobScheduler) -> None:
    """Until no run is in flight (a queued run starts before the one it follows leaves ``running``)."""
    async def poll() -> None:
        while True:
            if not scheduler.running:
                return
            await asyncio.sleep(0)

    await asyncio.wait_for(poll(), HANG_SECONDS)


async def test_wakes_during_a_run_give_exactly_one_more_run(gateway):
    """Three wakes while the job runs: one run after it, not three, and not none (what was announced
    mid-run must not wait for the next tick, an hour away here). Through the ``wake`` signal, as a push
    stream sends it."""
    gate = Gate()
    scheduler = _scheduler_with(gateway, 30, Job("test.gate", gate, 3600))
    try:
        gateway.signals.publish("wake", "test.gate")
        await asyncio.wait_for(gate.started.wait(), HANG_SECONDS)
        assert scheduler.running == ["test.gate"]
        for _ in range(3):
            gateway.signals.publish("wake", "test.gate")
        assert gate.runs == 1
        gate.release.set()
        await _idle(scheduler)
        assert gate.runs == 2
    finally:
        await scheduler.drain()
    assert gateway.signals.subscribers("wake") == 0  # the drain unsubscribed


async def test_wakes_for_unknown_jobs_or_after_the_stop_run_nothing(gateway, caplog):
    gate = Gate()
    gate.release.set()
    scheduler = _scheduler_with(gateway, 30, Job("test.gate", gate, 3600))
    scheduler.wake("no.such.job")
    scheduler.wake("no.such.job")
    assert caplog.text.count("wake for unknown job 'no.such.job' ignored") == 1
    await scheduler.drain()
    scheduler.wake("test.gate")
    assert scheduler.running == [] and gate.runs == 0


async def test_a_wake_queued_behind_a_run_is_dropped_by_the_stop(gateway):
    gate = Gate()
    scheduler = _scheduler_with(gateway, 30, Job("test.gate", gate, 3600))
    scheduler.wake("test.gate")
    await asyncio.wait_for(gate.started.wait(), HANG_SECONDS)
    scheduler.wake("test.gate")  # one more run queued ...
    draining = asyncio.create_task(scheduler.drain())
    await asyncio.sleep(0)
    gate.release.set()
    assert await draining == []
    assert gate.runs == 1 and scheduler.running == []  # ... and not started once the stop began


@CROSS_PROCESS
async def test_a_wake_heard_in_one_process_runs_the_job_in_the_leader(make_client, make_config):
    """Two processes on one database; B leads the job (a run in flight holds its lock). A wake published in
    A reaches B by NOTIFY, and B runs the job once more as soon as its run ends; A's own try is refused the
    lock. Break caught: the wake kept in process (B never runs again), or A running it beside the leader."""
    entered: list[str] = []
    release, b_heard, b_started = asyncio.Event(), asyncio.Event(), asyncio.Event()

    class Gated:
        PLUGIN_NAME = "gated"

        def __init__(self, name: str) -> None:
            self.name = name

        @hookimpl
        def register_jobs(self, registry):
            async def gated(gateway):
                entered.append(self.name)
                if self.name == "b":
                    b_started.set()
                await release.wait()

            registry.add("gated.job", gated, seconds=3600)

    config = make_config()
    a = await make_client(config, get_plugin_manager([Gated("a")]))
    b = await make_client(config, get_plugin_manager([Gated("b")]))
    gw_a, gw_b = a.app[GATEWAY], b.app[GATEWAY]
    scheduler_a, scheduler_b = gw_a.services["scheduler"], gw_b.services["scheduler"]
    scheduler_b.wake("gated.job")  # B leads: its run holds the lock
    try:
        await asyncio.wait_for(b_started.wait(), HANG_SECONDS)
        gw_b.signals.subscribe("wake", lambda name: b_heard.set())  # after the scheduler's own subscriber
        gw_a.signals.publish("wake", "gated.job")
        await asyncio.wait_for(b_heard.wait(), HANG_SECONDS)
        await _idle(scheduler_a)  # A tried: refused by B's lock
        assert entered == ["b"] and scheduler_b.running == ["gated.job"]
    finally:
        release.set()
    await _idle(scheduler_b)
    assert entered == ["b", "b"]
