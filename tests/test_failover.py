"""PostgreSQL primary killed under load, its synchronous standby promoted (issue 48 item 4): nothing acknowledged lost.

A primary and a streaming standby of this test alone (tests/pg_cluster.py:
``initdb``, ``pg_basebackup -R``, ``synchronous_standby_names = '*'`` set
on the primary once the copy is taken, so the standby does not inherit
it and the promoted server does not wait for a standby of its own). One
gateway in this process, never restarted, serves on the multi-host URL
``postgresql://postgres@127.0.0.1:P,127.0.0.1:S/db?target_session_attrs=read-write``
under a mixed load: payment creates, devnet payments credited by the scan
job, payouts signed and broadcast by the payout job, internal transfers,
webhooks delivered. The primary's postmaster is killed with -9, the
standby promoted (``pg_ctl promote``) a second later.

Afterwards: every answer was a 2xx or the 503 envelope (never a 500);
2xx came again after the promotion; every write answered 2xx before the
kill is on the new primary; every devnet payment credited once; every
payout paid by one devnet transfer; ``ledger check`` is clean; each job's
leadership was taken on the new primary. The time from the promotion to
the first 2xx write is printed (docs/decisions.md, "Failover"), not
asserted. About 20 seconds, both clusters' start included.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from orbchain.chains.devnet.adapter import devnet_chain
from orbchain.core.infra import db_hosts
from orbchain.core.infra.config import load_config
from orbchain.core.infra.db import Database
from orbchain.core.infra.db_faults import unavailable_cause
from orbchain.core.infra.db_hosts import single_host_dsns
from orbchain.core.infra.db_urls import pg_options
from orbchain.core.jobs import DELIVERY_JOB, PAYOUT_JOB
from orbchain.core.ledger.check import check_ledger
from orbchain.core.watching.scanner import scan_job_name
from orbchain.scheduler.runner import run_job_once
from orbchain.web.app import create_app
from orbchain.web.keys import GATEWAY

from .pg_cluster import PrivateCluster
from .dashboard_support import Visitor
from .push_support import until
from .support import WebhookReceiver, advance_clock, api, free_port, signup
from .test_db_restart import Load, assert_nothing_twice, creates, payers, payouts, scheduler, settle

pytestmark = [pytest.mark.slow, pytest.mark.postgresql_only("a PostgreSQL primary and its streaming standby")]

CALM_SECONDS = 2.0  # load before the kill, and after the first 2xx on the new primary
DOWN_SECONDS = 1.0  # from the kill to the promotion: no primary answers


class Failover(Load):
    """The load's record, plus when each write was answered 2xx (to tell those before the kill)."""

    def __init__(self) -> None:
        super().__init__()
        self.transfers: list[tuple[str, float]] = []  # (transfer_id, when answered)
        self.created_at: dict[str, float] = {}
        self.payout_at: dict[str, float] = {}
        self.first_2xx_after: float | None = None  # the first write answered 2xx after the promotion
        self.promoted_at = float("inf")

    async def answer(self, response: Any) -> dict[str, Any] | None:
        body = await super().answer(response)
        now = time.monotonic()
        if body is not None and now > self.promoted_at and self.first_2xx_after is None:
            self.first_2xx_after = now
        if body is not None and "track_id" in (body.get("data") or {}):
            target = self.payout_at if response.url.path == "/v1/payout" else self.created_at
            target[body["data"]["track_id"]] = now
        return body


async def transfers(client: Any, merchant: Any, to_account: str, load: Failover) -> None:
    while not load.stopping:
        body = await load.answer(await client.post("/v1/transfer", headers=merchant.merchant_key,
                                                   json={"to_account_id": to_account, "coin": "BTC",
                                                         "amount": "0.00001"}))
        if body is not None:
            load.transfers.append((body["data"]["transfer_id"], time.monotonic()))
        await asyncio.sleep(0.15)


async def reports_read_the_standby(client: Any, merchant: Any, gateway: Any) -> None:
    """``[database] read_url`` (issue 48 item 5): analytics read the standby, its page says as of when; money
    reads the primary."""
    assert await gateway.db.fetch_val("SELECT pg_is_in_recovery()") is False
    assert await gateway.reports_db.fetch_val("SELECT pg_is_in_recovery()") is True

    async def credit_replayed() -> bool:
        status, body = await api(client, "GET", "/dashboard/analytics", merchant.jwt)
        assert status == 200, body
        return body["data"]["totals"]["total_deposit_count"] == 1

    gateway.db.query_log, gateway.reports_db.query_log = [], []
    await until(credit_replayed, "the fixture's credited deposit in the standby's analytics")
    assert any("analytics_daily" in q for q in gateway.reports_db.query_log)
    assert not any("analytics_daily" in q for q in gateway.db.query_log)  # nor on the request's pinned connection
    gateway.db.query_log = gateway.reports_db.query_log = None
    visitor = Visitor(client)
    await visitor.sign_up("reader@example.com")
    page = await visitor.get("/app/analytics")
    assert "Read from a standby: figures as of" in page


@pytest.fixture
async def replicated():
    """A primary and its synchronous streaming standby, each on a free port; a database ``failover`` on both."""
    primary = PrivateCluster(Path(tempfile.mkdtemp(prefix="orbchain-pg-primary-")), free_port())
    standby = PrivateCluster(Path(tempfile.mkdtemp(prefix="orbchain-pg-standby-")), free_port())
    try:
        primary.init()
        primary.start()
        admin = await asyncpg.connect(primary.dsn())
        await admin.execute('CREATE DATABASE "failover"')
        await asyncio.to_thread(standby.standby_of, primary)
        standby.start()
        # Only now: a standby copied with this setting would, once promoted, wait for a standby it does not have.
        await admin.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
        await admin.execute("SELECT pg_reload_conf()")

        async def synchronous() -> bool:
            return bool(await admin.fetchval("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'"))

        await until(synchronous, "the standby to stream synchronously", seconds=30)
        await admin.close()
        yield primary, standby
    finally:
        for cluster in (primary, standby):
            cluster.remove()
            shutil.rmtree(cluster.root, ignore_errors=True)


@pytest.fixture
async def failover_shop(replicated, aiohttp_client, tmp_path):
    """A gateway on the pair's multi-host URL, a funded merchant, a transfer recipient, a webhook receiver."""
    primary, standby = replicated
    url = (f"postgresql+asyncpg://postgres@127.0.0.1:{primary.port},127.0.0.1:{standby.port}/failover"
           "?target_session_attrs=read-write")
    config = load_config(None, environ={}).with_overrides(
        server={"data_dir": str(tmp_path / "var"), "environment": "development"},
        database={"url": url, "read_url": standby.dsn("failover")},
        scheduler={"enabled": False}, rate_limits={"enabled": False}, webhooks={"allow_private_urls": True})
    receiver = WebhookReceiver()
    hook_url = await receiver.start()
    client = await aiohttp_client(create_app(config))
    merchant = await signup(client, "failover@example.com")
    status, body = await api(client, "PUT", "/dashboard/settings/webhook", merchant.jwt, json={"webhook_url": hook_url})
    assert status == 200, body
    bob = await signup(client, "bob@example.com")
    status, body = await api(client, "GET", "/dashboard/account", bob.jwt)
    assert status == 200, body
    bob_account = body["data"]["account"]["account_id"]
    gateway = client.app[GATEWAY]
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.1"})
    assert status == 200, body
    chain, btc = devnet_chain(gateway), gateway.coins.require("BTC")
    await chain.pay(btc, body["data"]["address"], btc.to_units("0.1"))
    for _ in range(btc.confirmations + 1):
        await chain.mine(1)
        await run_job_once(gateway, gateway.jobs.get(scan_job_name("devnet")))
    yield client, merchant, bob_account, gateway, receiver
    await receiver.close()


async def test_primary_killed_and_standby_promoted_loses_nothing_acknowledged(replicated, failover_shop):
    primary, standby = replicated
    client, merchant, bob_account, gateway, receiver = failover_shop
    jobs = (scan_job_name("devnet"), PAYOUT_JOB, DELIVERY_JOB)
    await reports_read_the_standby(client, merchant, gateway)
    load = Failover()
    tasks = [asyncio.ensure_future(work) for work in (
        creates(client, merchant, load), creates(client, merchant, load), payouts(client, merchant, load),
        transfers(client, merchant, bob_account, load), payers(gateway, load), scheduler(gateway, load, jobs))]
    try:
        await asyncio.sleep(CALM_SECONDS)
        killed_at = time.monotonic()
        await primary.async_kill()
        await asyncio.sleep(DOWN_SECONDS)
        await standby.async_promote()
        load.promoted_at = time.monotonic()
        await until(lambda: load.first_2xx_after is not None, "a 2xx write on the promoted standby", seconds=30)
        await asyncio.sleep(CALM_SECONDS)
    finally:
        load.stopping = True
        await asyncio.gather(*tasks)
    assert load.first_2xx_after is not None
    print(f"\nfailover: first 2xx write {load.first_2xx_after - load.promoted_at:.2f} s after the promotion"
          f" ({load.first_2xx_after - killed_at:.2f} s after the kill); answers {dict(load.statuses)}")

    # Answers: 200 or the 503 envelope, never a 500 nor a hang the load would not have come back from.
    assert set(load.statuses) == {200, 503}, (load.statuses, [b for b, _ in load.refusals if b["status"] != 503][:2])
    for body, headers in load.refusals:
        assert body["error"]["code"] == "database_unavailable" and int(headers["Retry-After"]) > 0, body
    await settle(gateway, load, jobs)
    db = gateway.db
    assert await db.fetch_val("SELECT pg_is_in_recovery()") is False
    assert await db.fetch_val("SELECT inet_server_port()") == standby.port
    # Every write answered 2xx before the kill is on the new primary (synchronous replication).
    acknowledged = [t for t, when in load.created_at.items() if when < killed_at]
    assert acknowledged
    for track_id in load.created_at:
        assert await db.fetch_val("SELECT 1 FROM payments WHERE track_id = :t", {"t": track_id}) == 1, track_id
    for track_id in load.payout_at:
        assert await db.fetch_val("SELECT 1 FROM payouts WHERE track_id = :t", {"t": track_id}) == 1, track_id
    assert load.transfers and any(when < killed_at for _, when in load.transfers)
    for transfer_id, _ in load.transfers:
        assert await db.fetch_val("SELECT count(*) FROM ledger_transactions WHERE reference LIKE :r",
                                  {"r": f"%{transfer_id}%"}) >= 1, transfer_id
    await assert_nothing_twice(db, load.paid, payouts_at_least=len(load.payout_at))
    report = await check_ledger(db)
    assert report.ok, report.lines()
    # Leadership of each job was taken again on the new primary (the old one's locks died with it).
    for job in jobs:
        assert any(when > load.promoted_at for name, when in load.led if name == job), job
    for _ in range(20):  # what the credits enqueued, delivered from the new primary
        if {b.get("track_id") for b in receiver.of_type("payment.paid")} >= set(load.paid):
            break
        advance_clock(gateway, 30)
        await run_job_once(gateway, gateway.jobs.get(DELIVERY_JOB))
    assert {b.get("track_id") for b in receiver.of_type("payment.paid")} >= set(load.paid)


def test_a_multi_host_url_is_tried_host_by_host_and_a_standby_is_an_outage():
    url = "postgresql://orb:secret@10.0.0.1:5432,10.0.0.2:5433/shop?target_session_attrs=read-write&sslmode=prefer"
    dsn, options = pg_options(url.replace("postgresql://", "postgresql+asyncpg://"))
    assert dsn == url and options == {"min_size": 1, "max_size": 20}
    assert single_host_dsns(dsn) == [
        "postgresql://orb:secret@10.0.0.1:5432/shop?target_session_attrs=read-write&sslmode=prefer",
        "postgresql://orb:secret@10.0.0.2:5433/shop?target_session_attrs=read-write&sslmode=prefer"]
    assert single_host_dsns("postgresql://db.example:5432/shop") == ["postgresql://db.example:5432/shop"]
    assert unavailable_cause(asyncpg.TargetServerAttributeNotMatched("only standbys")) is not None


async def test_a_silent_first_host_costs_its_own_timeout_not_the_whole_connect(private_pg, monkeypatch):
    """A primary whose machine is gone accepts nothing and refuses nothing: the next host must still be tried."""
    monkeypatch.setattr(db_hosts, "HOST_CONNECT_SECONDS", 0.5)
    accepted: list[asyncio.StreamWriter] = []

    async def silent(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)  # never answers the startup message

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    silent_port = server.sockets[0].getsockname()[1]
    db = Database(f"postgresql+asyncpg://postgres@127.0.0.1:{silent_port},127.0.0.1:{private_pg.port}/postgres"
                  "?target_session_attrs=read-write")
    try:
        # The bound only ends a hang: asyncpg alone waits its 60 s connect timeout on the silent host.
        await asyncio.wait_for(db.connect(), 30)
        assert await db.fetch_val("SELECT inet_server_port()") == private_pg.port
        assert accepted  # the silent host was tried first
    finally:
        await db.disconnect()
        server.close()
        for writer in accepted:
            writer.close()
