"""Auto-withdraw rules (plugins/autowithdraw, SPEC 2.16, 4.8, 8), on both databases.

Time moves through ``gateway.clock``; the 5-minute check is called directly.
"""

from __future__ import annotations

import asyncio

import pytest

from orbchain.plugins.autowithdraw import check
from orbchain.plugins.autowithdraw.check import run_autowithdraw

from .support import advance_clock, api, fill_backlog, hold_concurrent_reads, signup
from .test_payouts import BTC_DEST, EVM_DEST, balance, fund, payout_env

PATH = "/dashboard/settings/auto-withdraw"
RULE = {"coin": "BTC", "threshold_native": "0.005", "destination": BTC_DEST}


@pytest.fixture
async def env(make_client, make_config):
    client, merchant, devnet = await payout_env(make_client, make_config)
    await fund(client, merchant, devnet)  # 0.0099 BTC available
    return client, merchant, devnet


async def put(client, merchant, rules):
    return await api(client, "PUT", PATH, merchant.jwt, json={"rules": rules})


async def rules_of(client, merchant):
    status, body = await api(client, "GET", PATH, merchant.jwt)
    assert status == 200, body
    return body["data"]["rules"]


async def payouts_of(client, merchant):
    status, body = await api(client, "GET", "/dashboard/payouts", merchant.jwt)
    assert status == 200, body
    return body["data"]["payouts"]


async def test_put_replaces_and_get_reads_the_rules(env):
    client, merchant, _ = env
    assert await rules_of(client, merchant) == []
    status, body = await put(client, merchant, [{**RULE, "coin": "btc", "threshold_native": "0.00500"},
                                                {"coin": "ETH", "threshold_native": "1", "destination": EVM_DEST}])
    assert status == 200, body
    assert [(r["coin"], r["threshold_native"], r["destination"]) for r in body["data"]["rules"]] == [
        ("BTC", "0.005", BTC_DEST), ("ETH", "1", EVM_DEST)]
    assert await rules_of(client, merchant) == body["data"]["rules"]
    assert (await put(client, merchant, []))[0] == 200
    assert await rules_of(client, merchant) == []
    other = await signup(client, "other@example.com")
    await put(client, merchant, [RULE])
    assert await rules_of(client, other) == []


@pytest.mark.parametrize("rules, field", [
    ("nope", "rules"),
    ([RULE] * 21, "rules"),
    ([RULE, RULE], "rules"),  # one rule per coin
    (["BTC"], "rules[0]"),
    ([{**RULE, "destination": "short"}], "rules[0].destination"),
    ([{**RULE, "destination": "x" * 201}], "rules[0].destination"),
    ([{**RULE, "threshold_native": "0"}], "rules[0].threshold_native"),
    ([{**RULE, "threshold_native": "0.000000001"}], "rules[0].threshold_native"),
    ([{**RULE, "threshold_native": "0.00000001"}], "rules[0].threshold_native"),  # below the minimum payout
    ([{**RULE, "coin": "NOPE"}], "rules[0].coin"),
    ([{"coin": "BTC", "destination": BTC_DEST}], "rules[0].threshold_native"),
])
async def test_bad_rules_are_a_400_envelope_and_change_nothing(env, rules, field):
    client, merchant, _ = env
    assert (await put(client, merchant, [RULE]))[0] == 200
    before = await rules_of(client, merchant)
    status, body = await put(client, merchant, rules)
    assert status == 400 and body["data"] is None and field in body["error"]["detail"], body
    assert await rules_of(client, merchant) == before


@pytest.mark.parametrize("destination, code", [("bc1qnope-not-an-address", "invalid_address"),
                                               ("1BitcoinEaterAddressDontSendf59kuE", "burn_address")])
async def test_destination_is_validated_like_a_payout(env, destination, code):
    client, merchant, _ = env
    status, body = await put(client, merchant, [{**RULE, "destination": destination}])
    assert status == 400 and body["error"]["code"] == code
    assert await rules_of(client, merchant) == []


async def test_a_rule_fires_at_its_threshold_then_cools_down(env):
    client, merchant, devnet = env
    gateway = devnet.gateway
    await put(client, merchant, [{**RULE, "threshold_native": "0.01"}])
    assert await run_autowithdraw(gateway) == 0  # 0.0099 < 0.01
    await fund(client, merchant, devnet, "0.01")  # 0.0198
    before = gateway.now()
    assert await run_autowithdraw(gateway) == 1
    after = gateway.now()  # the real clock may tick over a second mid-check
    [payout] = await payouts_of(client, merchant)
    assert payout["amount"] == "0.0198" and payout["destination"] == BTC_DEST
    [rule] = await rules_of(client, merchant)
    assert before <= rule["last_fired_at"] <= after and rule["last_error"] is None
    await fund(client, merchant, devnet, "0.02")
    fired = rule["last_fired_at"]
    gateway.clock = lambda: fired + 1799  # from the firing, not from now: funding may take seconds under load
    assert await run_autowithdraw(gateway) == 0  # cooldown
    advance_clock(gateway, 1)
    assert await run_autowithdraw(gateway) == 1
    assert len(await payouts_of(client, merchant)) == 2


async def test_the_backlog_breaker_is_recorded_and_retried_at_the_next_check(env):
    client, merchant, devnet = env
    gateway = devnet.gateway
    await put(client, merchant, [RULE])
    await fill_backlog(gateway, merchant.merchant_id, 500)
    before = await balance(client, merchant)
    assert await run_autowithdraw(gateway) == 0
    [rule] = await rules_of(client, merchant)
    assert rule["last_error"] == "payout_backlog_too_large" and rule["last_fired_at"] is None
    assert await balance(client, merchant) == before
    await gateway.db.execute("DELETE FROM payouts WHERE id LIKE 'po_fake%'")
    advance_clock(gateway, 300)
    assert await run_autowithdraw(gateway) == 1  # no 30-minute wait after a 503
    [rule] = await rules_of(client, merchant)
    assert rule["last_error"] is None


async def test_two_concurrent_checks_fire_once(env, monkeypatch):
    client, merchant, devnet = env
    await put(client, merchant, [RULE])
    hold_concurrent_reads(monkeypatch, check.store, "all_rules", skip_empty=True)
    results = await asyncio.gather(run_autowithdraw(devnet.gateway), run_autowithdraw(devnet.gateway))
    assert sorted(results) == [0, 1]
    assert len(await payouts_of(client, merchant)) == 1


async def test_a_crash_after_the_claim_never_pays_twice(env, monkeypatch):
    client, merchant, devnet = env
    gateway = devnet.gateway
    await put(client, merchant, [RULE])

    async def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(check, "request_payout", crash)
    with pytest.raises(KeyboardInterrupt):
        await run_autowithdraw(gateway)
    monkeypatch.undo()
    advance_clock(gateway, 300)
    assert await run_autowithdraw(gateway) == 0  # still cooling down
    assert await payouts_of(client, merchant) == []
    advance_clock(gateway, 1500)
    assert await run_autowithdraw(gateway) == 1
    assert len(await payouts_of(client, merchant)) == 1


def test_the_idempotency_key_names_the_normalized_amount_and_window():
    assert check.idempotency_key("mer_1", "BTC", "0.0198", 3600) == "aw:mer_1:BTC:0.0198:2"
