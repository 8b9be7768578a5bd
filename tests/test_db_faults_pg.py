"""PostgreSQL sessions killed under the gateway (issue 33): ``pg_terminate_backend`` on the shared server.

What a killed session must not do: answer 500, leave the process needing a
restart, or leave a job without a leader. A request whose statement's
session is terminated answers 503 in the spec's envelope (Retry-After, the
cause named) and the next one is served on a new connection; a job leader's
advisory lock goes with its session, so another process (or this one, at
the next tick) leads the job. Restarts of the server itself run on a
private cluster (tests/test_db_restart.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import Any

import asyncpg
import pytest

from orbchain.core.contract.registries import Job
from orbchain.core.infra.db import Database
from orbchain.core.infra.pg_side import asyncpg_target
from orbchain.core.ledger.check import check_ledger
from orbchain.scheduler.runner import run_job_once

from .support import api
from .test_db_faults_sqlite import OUTAGE_LOG, assert_unavailable, outage_ends_at_once  # noqa: F401 - autouse

pytestmark = pytest.mark.postgresql_only("pg_terminate_backend and advisory locks are PostgreSQL's")


async def admin_session(db_url: str) -> Any:
    dsn, settings = asyncpg_target(db_url)
    return await asyncpg.connect(dsn, server_settings=settings or None)


async def terminate_others(admin: Any) -> int:
    """End every other session on this database: the gateway's pool, its side connection, all of them."""
    return int(await admin.fetchval(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"))


async def wait_for_lock_waiter(admin: Any) -> None:
    for _ in range(200):
        if await admin.fetchval("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                                " AND wait_event_type = 'Lock'"):
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the request never waited for the table lock")


async def test_a_terminated_session_mid_request_answers_503_and_the_next_is_served(merchant_shop, db_url, caplog):
    caplog.set_level(logging.INFO)
    client, merchant, gateway = merchant_shop.client, merchant_shop.merchant, merchant_shop.gateway
    body = {"currency": "BTC", "amount": "0.001"}
    status, first = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key, json=body)
    assert status == 200, first
    admin = await admin_session(db_url)
    try:
        holding = admin.transaction()
        await holding.start()
        await admin.execute("LOCK TABLE payments IN ACCESS EXCLUSIVE MODE")  # the next create waits on it
        waiting = asyncio.ensure_future(client.post("/v1/payment/white-label", headers=merchant.merchant_key,
                                                    json=body))
        await wait_for_lock_waiter(admin)
        assert await terminate_others(admin) >= 1
        response = await asyncio.wait_for(waiting, 10)
        answer = await response.json()
        assert_unavailable(response.status, answer, response.headers, answer["error"]["detail"]["cause"])
        assert answer["error"]["detail"]["cause"] in {"shut down or connection terminated", "connection lost"}
        await holding.rollback()
    finally:
        await admin.close()
    # The same process, no restart: the pool opens new sessions for what comes next.
    statuses = []
    for _ in range(5):
        status, created = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key, json=body)
        statuses.append(status)
    assert statuses == [200] * 5
    status, read = await api(client, "GET", f"/v1/payment/{first['data']['track_id']}", merchant.merchant_key)
    assert status == 200, read
    outage = [r.getMessage() for r in caplog.records if r.name == OUTAGE_LOG]
    assert len([m for m in outage if "unavailable (" in m]) == 1 and len([m for m in outage if "again" in m]) == 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR and r.name != OUTAGE_LOG]
    assert (await check_ledger(gateway.db)).ok


async def test_the_job_lock_goes_with_its_session_and_is_taken_again(gateway, db_url, caplog):
    caplog.set_level(logging.INFO)
    other = Database(db_url)  # a second gateway process on the same database
    await other.connect()
    admin = await admin_session(db_url)
    seen: list[str] = []

    async def try_lock() -> bool:
        async with other.advisory_lock("job:db-faults-probe") as got:
            return got

    async def other_leads() -> bool:
        """Asked from a task of its own outside this one's context: the run's pinned connection is not the other's."""
        return await asyncio.get_running_loop().create_task(try_lock(), context=contextvars.Context())

    async def leader_killed(gw: Any) -> None:
        pid = await gw.db.fetch_val("SELECT pg_backend_pid()")  # the run's session, which holds the lock
        assert await other_leads() is False  # this process leads the job
        await admin.execute("SELECT pg_terminate_backend($1)", pid)
        seen.append("killed")
        await gw.db.fetch_val("SELECT 1")  # the session is gone: the run ends with the database error

    async def leader_alive(gw: Any) -> None:
        seen.append("led again")

    try:
        assert await run_job_once(gateway, Job("db-faults-probe", leader_killed, 5)) is True
        assert seen == ["killed"]
        # The lock ended with the session: another process is elected at once ...
        assert await other_leads() is True
        # ... and so is this one, on a new session, at its next tick.
        assert await run_job_once(gateway, Job("db-faults-probe", leader_alive, 5)) is True
        assert seen == ["killed", "led again"]
    finally:
        await admin.close()
        await other.disconnect()
    lines = [r.getMessage() for r in caplog.records if r.name == OUTAGE_LOG]
    assert any("first met by job db-faults-probe" in m for m in lines) and any("available again" in m for m in lines)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR and r.name != OUTAGE_LOG]
