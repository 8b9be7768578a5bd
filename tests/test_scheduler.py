"""Scheduler: plugin jobs run inside the app's loop; one leader per job on PostgreSQL."""

from __future__ import annotations

import asyncio

from orbchain.core.plugins import get_plugin_manager, hookimpl
from orbchain.core.registries import Job
from orbchain.scheduler.runner import run_job_once
from orbchain.web.keys import GATEWAY


class TickPlugin:
    PLUGIN_NAME = "tick"

    def __init__(self):
        self.runs = 0

    @hookimpl
    def register_jobs(self, registry):
        async def tick(gateway):
            self.runs += 1

        registry.add("tick.every_100ms", tick, seconds=0.1)


async def test_plugin_jobs_run_while_the_app_serves(make_client, make_config):
    plugin = TickPlugin()
    client = await make_client(make_config(), get_plugin_manager([plugin]))
    await asyncio.sleep(0.5)
    assert plugin.runs >= 2
    assert "tick.every_100ms" in client.app[GATEWAY].services["scheduler"].job_ids


async def test_scheduler_can_be_disabled(make_client, make_config):
    plugin = TickPlugin()
    client = await make_client(make_config(scheduler={"enabled": False}), get_plugin_manager([plugin]))
    await asyncio.sleep(0.3)
    assert plugin.runs == 0 and "scheduler" not in client.app[GATEWAY].services


async def test_one_leader_per_job(gateway):
    running = []
    overlap = []

    async def slow(gw):
        running.append(1)
        overlap.append(len(running))
        await asyncio.sleep(0.2)
        running.pop()

    job = Job("slow.job", slow, 1)
    ran = await asyncio.gather(run_job_once(gateway, job), run_job_once(gateway, job))
    if gateway.db.is_postgres:
        assert sorted(ran) == [False, True] and overlap == [1]
    else:
        assert ran == [True, True]


async def test_a_failing_job_is_logged_and_survives(gateway, caplog):
    async def broken(gw):
        raise RuntimeError("job broke")

    assert await run_job_once(gateway, Job("broken.job", broken, 1)) is True
    assert "broken.job" in caplog.text
