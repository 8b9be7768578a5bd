"""The operator's webhook (issue 45 item 6): a payout held by the signing policy, a custody shortfall and its
recovery, and a node refused reach ``[operator] webhook_url``, signed like a merchant's webhook, once each, and
retried when the receiver fails."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import generate_latest

from orbchain.core.custody.run import run_custody_check
from orbchain.core.events.operator import deliver_operator_events
from orbchain.core.health.metrics_db import facts_registry, read_facts
from orbchain.core.health.node_refusals import refusal_announcer
from orbchain.core.infra.config import ConfigError, load_config
from orbchain.core.types.chains import ChainUnavailable
from orbchain.core.types.node_identity import NodeIdentity
from orbchain.web.keys import GATEWAY

from .support import WebhookReceiver, advance_clock
from .unit.test_node_identity import NOW, Chain
from .test_payouts import BTC_DEST, create, fund, payout_env, payout_row, work

SECRET = "operator-secret-0123456789"
COLD = "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"
THIEF = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


@pytest.fixture
async def receiver():
    hook = WebhookReceiver()
    yield hook
    await hook.close()


async def shop(make_client, make_config, receiver, **sections):
    url = await receiver.start()
    return await payout_env(make_client, make_config, operator={"webhook_url": url, "webhook_secret": SECRET},
                            **sections)


async def test_a_hold_reaches_the_operator_signed_once_and_is_retried_when_the_receiver_fails(
        make_client, make_config, receiver):
    client, merchant, devnet = await shop(make_client, make_config, receiver,
                                          signing={"max_per_payout": ["BTC=0.001"]})
    gw = client.app[GATEWAY]
    assert "operator.notify" in gw.jobs.names()
    await fund(client, merchant, devnet)
    track_id = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    await gw.db.execute(
        "INSERT INTO payouts (id, track_id, merchant_id, coin, chain, destination, amount, status, stage,"
        " next_attempt_at, created_at, updated_at) VALUES ('po_forged', 'forged', :m, 'BTC', 'devnet', :d, :a,"
        " 'Confirming', 'queued', :now, :now, :now)",
        {"m": merchant.merchant_id, "d": BTC_DEST, "a": gw.db.amount_param(100_000), "now": gw.now()})
    receiver.fail_next = 1
    await work(gw)
    assert (await payout_row(gw, track_id))["policy_hold"] == "over_payout_cap"
    assert await deliver_operator_events(gw) == 1  # the first answered 503: it waits, the second went
    assert await deliver_operator_events(gw) == 0  # not due yet
    advance_clock(gw, 3600)
    assert await deliver_operator_events(gw) == 1
    await work(gw, 60)  # held rows are not judged again: nothing new to announce
    assert await deliver_operator_events(gw) == 0
    bodies = {b["track_id"]: b for b in receiver.verified(SECRET)}
    assert set(bodies) == {track_id, "forged"}
    assert {b["event_type"] for b in bodies.values()} == {"payout.held_by_policy"}
    assert (bodies[track_id]["reason"], bodies[track_id]["amount"], bodies[track_id]["merchant_id"]) == (
        "over_payout_cap", "0.004", merchant.merchant_id)
    assert (bodies["forged"]["reason"], bodies["forged"]["payout_id"]) == ("no_reservation", "po_forged")
    rows = await gw.db.fetch_all("SELECT status, attempts FROM operator_events ORDER BY attempts")
    assert [(r["status"], r["attempts"]) for r in rows] == [("delivered", 1), ("delivered", 2)]
    scraped = generate_latest(facts_registry(await read_facts(gw))).decode()
    assert 'orbchain_operator_events{status="delivered",type="payout.held_by_policy"} 2.0' in scraped


async def test_a_shortfall_and_its_recovery_are_announced_once_each(make_client, make_config, receiver):
    client, merchant, devnet = await shop(make_client, make_config, receiver, custody={"cold": [f"devnet:{COLD}"]})
    gw = client.app[GATEWAY]
    await fund(client, merchant, devnet, "0.01")
    await run_custody_check(gw, "test")
    await devnet.chain.submit("ab" * 32, "BTC", THIEF, 300_000, payout_id="not-a-payout")
    await devnet.mine(1)
    await run_custody_check(gw, "test")
    await run_custody_check(gw, "test")  # still short: not announced again
    await deliver_operator_events(gw)
    await devnet.pay("BTC", COLD, "0.003")
    await devnet.mine(1)
    await run_custody_check(gw, "test")
    await deliver_operator_events(gw)
    bodies = receiver.verified(SECRET)
    assert [(b["event_type"], b["coin"]) for b in bodies] == [("custody.shortfall", "BTC"),
                                                              ("custody.recovered", "BTC")]
    assert (bodies[0]["shortfall"], bodies[0]["held"], bodies[0]["owed"]) == ("0.003", "0.007", "0.01")


async def test_a_node_refused_is_announced_once_per_reason(make_client, make_config, receiver):
    client, _, _ = await shop(make_client, make_config, receiver)
    gw = client.app[GATEWAY]
    for _ in range(2):  # two serve processes, each vetting its own NodeSet, refuse the same node within the hour
        chain = Chain(1)
        next(iter(chain.scripts.values())).identity = NodeIdentity("test", "t0", False, NOW)
        chain.nodes.on_refused = refusal_announcer(gw)
        with pytest.raises(ChainUnavailable):
            await chain.tip()
        await asyncio.gather(*gw.services["operator.node_refusals"])
    await deliver_operator_events(gw)
    bodies = receiver.verified(SECRET)
    assert [(b["event_type"], b["chain"], b["node"], b["reason"]) for b in bodies] == [
        ("node.refused", "testchain", "http://node0.example:8332", "wrong_network")]
    assert "secret" not in str(bodies) and "key0" not in str(bodies)  # the URL's credentials and path stay out


def test_the_operator_webhook_must_be_signed_and_http():
    with pytest.raises(ConfigError, match="needs 'operator.webhook_secret'"):
        load_config(None, environ={}).with_overrides(operator={"webhook_url": "https://ops.example/hook"})
    with pytest.raises(ConfigError, match="http:// or https://"):
        load_config(None, environ={}).with_overrides(operator={"webhook_url": "ftp://x", "webhook_secret": "s"})
