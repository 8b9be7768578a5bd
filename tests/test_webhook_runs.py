"""A delivery run (core/events/delivery_run.py) and the wake after commit (core/events/delivery_wake.py), both DBs.

Per endpoint one request at a time in due order, endpoints side by side;
an event's attempts one after another, never twice at once, even when two
runs in two processes overlap; a dead or too slow endpoint left, uncounted,
to the next tick; the ``wake`` signal only after a commit.
"""

from __future__ import annotations

import asyncio
import sys

import pytest
from aiohttp import web

from orbchain.core.events import delivery_wake, webhooks
from orbchain.core.events.outbox import OutboxEvent, enqueue_events, outbox_row
from orbchain.core.events.webhooks import LEASE_MARGIN_SECONDS, deliver_due, retry_delay
from orbchain.core.infra.signals import WAKE
from tests.test_webhooks import Clock, Receiver, T0, add_merchant, logs, paid

DEAD_URL = "http://127.0.0.1:9/hook"  # the discard port: connection refused


class Counting(Receiver):
    """A receiver that also counts requests in flight, its own and (``shared``) all receivers'."""

    shared = {"now": 0, "most": 0}

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.most = 0
        self.on_request = None

    async def handle(self, request: web.Request) -> web.Response:
        self.in_flight += 1
        self.shared["now"] += 1
        self.most = max(self.most, self.in_flight)
        self.shared["most"] = max(self.shared["most"], self.shared["now"])
        try:
            if self.on_request is not None:
                self.on_request()
            return await super().handle(request)
        finally:
            self.in_flight -= 1
            self.shared["now"] -= 1


@pytest.fixture
async def receivers():
    Counting.shared.update(now=0, most=0)
    started = [Counting() for _ in range(3)]
    for rx in started:
        rx.delay = 0.01
        await rx.start()
    yield started
    for rx in started:
        await rx.server.close()


@pytest.fixture
def clock(gateway):
    gateway.clock = Clock()
    return gateway.clock


async def due_order(gateway, event_ids):
    rows = await gateway.db.fetch_all("SELECT event_id, created_at FROM webhook_events")
    due = {row["event_id"]: (int(row["created_at"]), row["event_id"]) for row in rows}
    return sorted(event_ids, key=due.__getitem__)


async def test_one_request_at_a_time_per_endpoint_in_due_order_endpoints_side_by_side(
        gateway, clock, receivers, monkeypatch):
    monkeypatch.setattr(webhooks, "BATCH_SIZE", 7)  # several claims in one run, interleaved across endpoints
    merchants = [await add_merchant(gateway, webhook_url=rx.url) for rx in receivers]
    sent: dict[str, list[str]] = {m: [] for m in merchants}
    for i in range(45):
        merchant = merchants[i % 3]
        sent[merchant].append(await paid(gateway, merchant, f"ORDER-{i}"))
        if i % 10 == 9:
            clock.advance(1)  # several due seconds: order by time first, then by event id
    assert await deliver_due(gateway) == 45
    for merchant, rx in zip(merchants, receivers):
        assert rx.event_ids() == await due_order(gateway, sent[merchant])
        assert rx.most == 1
    assert Counting.shared["most"] > 1  # the endpoints did not wait for each other
    rows = await gateway.db.fetch_all("SELECT status, attempts FROM webhook_events")
    assert {(row["status"], row["attempts"]) for row in rows} == {("delivered", 1)}


async def test_an_events_attempts_follow_each_other_with_the_retry_schedule(gateway, clock, receivers):
    rx = receivers[0]
    merchant = await add_merchant(gateway, webhook_url=rx.url)
    ids = [await paid(gateway, merchant, f"RETRY-{i}") for i in range(4)]
    rx.answers = [500, 200, 503, 200]  # the first and third event fail once
    assert await deliver_due(gateway) == 4
    clock.advance(retry_delay(1) - 1)
    assert await deliver_due(gateway) == 0  # not due before its delay
    clock.advance(1)
    assert await deliver_due(gateway) == 2
    order = await due_order(gateway, ids)
    assert rx.event_ids() == order + [order[0], order[2]]
    for event_id in ids:
        attempts = [row["attempt"] for row in await logs(gateway, event_id)]
        assert attempts == sorted(attempts) == list(range(1, len(attempts) + 1))
        assert (await outbox_row(gateway, event_id))["status"] == "delivered"


async def test_a_dead_endpoint_costs_one_attempt_per_run_and_holds_nobody_up(gateway, clock, receivers):
    live = receivers[0]
    dead = await add_merchant(gateway, webhook_url=DEAD_URL)
    alive = await add_merchant(gateway, webhook_url=live.url)
    dead_ids = [await paid(gateway, dead, f"DEAD-{i}") for i in range(5)]
    live_ids = [await paid(gateway, alive, f"LIVE-{i}") for i in range(5)]
    assert await deliver_due(gateway) == 6
    assert sorted(live.event_ids()) == sorted(live_ids)
    rows = {row["event_id"]: row for row in await gateway.db.fetch_all(
        "SELECT event_id, status, attempts, next_attempt_at, claim_token FROM webhook_events")}
    tried = [e for e in dead_ids if rows[e]["attempts"] == 1]
    assert tried == [(await due_order(gateway, dead_ids))[0]]
    assert rows[tried[0]]["next_attempt_at"] == T0 + retry_delay(1)  # the schedule as before
    for event_id in set(dead_ids) - set(tried):  # given back uncounted, due at the next tick
        row = rows[event_id]
        assert (row["status"], row["attempts"], row["claim_token"]) == ("pending", 0, None)
        assert row["next_attempt_at"] == T0 + gateway.config.webhooks.tick_seconds
        assert await logs(gateway, event_id) == []


async def test_an_endpoint_too_slow_for_its_leases_leaves_the_rest_to_the_next_tick(gateway, clock, receivers):
    rx = receivers[0]
    merchant = await add_merchant(gateway, webhook_url=rx.url)
    ids = [await paid(gateway, merchant, f"SLOW-{i}") for i in range(3)]
    rx.on_request = lambda: clock.advance(LEASE_MARGIN_SECONDS + 1)  # the first answer takes over a minute
    assert await deliver_due(gateway) == 1
    first, *rest = await due_order(gateway, ids)
    assert rx.event_ids() == [first]
    for event_id in rest:
        row = await gateway.db.fetch_one("SELECT status, attempts, claim_token FROM webhook_events"
                                         " WHERE event_id = :id", {"id": event_id})
        assert (row["status"], row["attempts"], row["claim_token"]) == ("pending", 0, None)
    rx.on_request = None
    clock.advance(gateway.config.webhooks.tick_seconds)
    assert await deliver_due(gateway) == 2
    assert rx.event_ids() == [first, *rest]


# -- two processes ---------------------------------------------------------------------------------

OTHER_PROCESS = """
import asyncio, sys
from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.core.events import webhooks
from orbchain.core.infra.config import load_config
from orbchain.core.startup import build_gateway

async def main():
    config = load_config(None, environ={}).with_overrides(
        server={"data_dir": sys.argv[2], "environment": "development"}, database={"url": sys.argv[1]},
        webhooks={"allow_private_urls": True})
    webhooks.BATCH_SIZE = 3
    gateway = build_gateway(config, get_plugin_manager(blocked=()))
    await gateway.db.connect()
    try:
        print("ready", flush=True)
        sys.stdin.readline()
        print(await webhooks.deliver_due(gateway), flush=True)
    finally:
        await gateway.db.disconnect()

asyncio.run(main())
"""


async def test_two_processes_delivering_at_once_send_each_event_once(gateway, config, receivers, monkeypatch,
                                                                     tmp_path):
    """The claim (SKIP LOCKED on PostgreSQL, the single writer on SQLite) is what keeps two runs apart."""
    monkeypatch.setattr(webhooks, "BATCH_SIZE", 3)
    for rx in receivers:
        rx.delay = 0.03
    merchants = [await add_merchant(gateway, webhook_url=rx.url) for rx in receivers]
    ids = [await paid(gateway, merchants[i % 3], f"TWO-{i}") for i in range(36)]
    other = await asyncio.create_subprocess_exec(
        sys.executable, "-c", OTHER_PROCESS, config.database.url, str(tmp_path / "other"),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    try:
        assert (await asyncio.wait_for(other.stdout.readline(), 60)).strip() == b"ready"
        other.stdin.write(b"go\n")
        await other.stdin.drain()
        here = await deliver_due(gateway)
        there = int((await asyncio.wait_for(other.stdout.readline(), 60)).strip())
    finally:
        if other.returncode is None:
            other.kill()
        await other.wait()
    assert here + there == 36 and here and there  # both runs sent some
    assert sorted(e for rx in receivers for e in rx.event_ids()) == sorted(ids)
    rows = await gateway.db.fetch_all("SELECT status, attempts FROM webhook_events")
    assert {(row["status"], row["attempts"]) for row in rows} == {("delivered", 1)}
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM webhook_deliveries") == 36


# -- the wake after commit -------------------------------------------------------------------------------


@pytest.fixture
def wakes(gateway):
    heard: list[str] = []
    unsubscribe = gateway.signals.subscribe(WAKE, heard.append)
    yield heard
    unsubscribe()


async def test_the_wake_goes_out_after_the_commit_that_enqueued(gateway, wakes):
    merchant = await add_merchant(gateway, webhook_url="http://127.0.0.1:9/hook")
    async with gateway.db.transaction():
        await paid(gateway, merchant, "WAKE-1")
        assert wakes == []  # not before the commit: the woken run would not see the row
    assert wakes == ["webhooks.deliver"]


async def test_no_wake_for_a_rolled_back_enqueue(gateway, wakes):
    merchant = await add_merchant(gateway, webhook_url="http://127.0.0.1:9/hook")
    with pytest.raises(RuntimeError):
        async with gateway.db.transaction():
            await paid(gateway, merchant, "WAKE-RB")
            raise RuntimeError("the change is refused")
    async with gateway.db.transaction():  # a savepoint rolled back inside a transaction that commits
        with pytest.raises(RuntimeError):
            async with gateway.db.transaction():
                await paid(gateway, merchant, "WAKE-SP")
                raise RuntimeError("the inner part is refused")
    await asyncio.sleep(2 * delivery_wake.WINDOW)
    assert wakes == []
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM webhook_events") == 0


async def test_no_wake_for_an_event_that_will_never_be_sent_or_was_there_already(gateway, wakes):
    unsigned = await add_merchant(gateway, webhook_url="http://127.0.0.1:9/hook", webhook_secret=None)
    await paid(gateway, unsigned, "WAKE-NOSECRET")
    assert wakes == []
    merchant = await add_merchant(gateway, webhook_url="http://127.0.0.1:9/hook")
    await paid(gateway, merchant, "WAKE-TWICE")
    await asyncio.sleep(2 * delivery_wake.WINDOW)
    wakes.clear()
    await paid(gateway, merchant, "WAKE-TWICE")  # the same logical event again: no new row
    await asyncio.sleep(2 * delivery_wake.WINDOW)
    assert wakes == []


async def test_a_burst_of_commits_is_followed_by_a_wake_and_one_transaction_wakes_once(gateway, wakes):
    """How many wakes a burst folds into is tests/unit/test_delivery_wake.py; here: the last one is never lost."""
    merchant = await add_merchant(gateway, webhook_url="http://127.0.0.1:9/hook")
    async with gateway.db.transaction():
        await enqueue_events(gateway, [OutboxEvent(merchant, "payment.paid", {"track_id": f"B{i}"}, f"burst:{i}")
                                       for i in range(20)])
    assert wakes == ["webhooks.deliver"]
    for i in range(10):
        before_last = len(wakes)
        await paid(gateway, merchant, f"AFTER-BURST-{i}")
    for _ in range(100):  # the window, plus a NOTIFY in flight on PostgreSQL
        if len(wakes) > before_last:
            break
        await asyncio.sleep(delivery_wake.WINDOW)
    assert len(wakes) > before_last  # a wake at or after the last commit


async def test_an_after_commit_callback_that_raises_does_not_undo_or_stop_the_others(gateway):
    ran: list[str] = []

    def broken() -> None:
        raise RuntimeError("a subscriber's bug")

    async with gateway.db.transaction():
        await add_merchant(gateway)
        gateway.db.on_commit(broken)
        gateway.db.on_commit(lambda: ran.append("second"))
        assert ran == []
    assert ran == ["second"] and await gateway.db.fetch_val("SELECT COUNT(*) FROM merchants") == 1
    gateway.db.on_commit(lambda: ran.append("outside"))  # no transaction: at once
    assert ran == ["second", "outside"]
