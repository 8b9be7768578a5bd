"""Payout schedules (plugins/schedules, SPEC 2.16, 4.11, 8), on both databases.

Time moves through ``gateway.clock``; the tick is called directly.
"""

from __future__ import annotations

import asyncio

import pytest

from orbchain import api as services
from orbchain.plugins.schedules import tick
from orbchain.plugins.schedules.tick import run_schedules

from .support import advance_clock, api, fill_backlog, hold_concurrent_reads, signup
from .test_payouts import BTC_DEST, balance, fund, payout_env

BURN_BTC = "1BitcoinEaterAddressDontSendf59kuE"
PATH = "/dashboard/payout-schedules"
HOUR = 3600  # the shortest interval; the JWT (24 h) outlives many runs


@pytest.fixture
async def env(make_client, make_config):
    client, merchant, devnet = await payout_env(make_client, make_config)
    await fund(client, merchant, devnet)  # 0.0099 BTC available
    return client, merchant, devnet


async def create(client, merchant, **fields):
    body = {"coin": "BTC", "destination": BTC_DEST, "min_amount": "0.001", "interval_sec": HOUR, **fields}
    return await api(client, "POST", PATH, merchant.jwt, json=body)


async def schedules(client, merchant):
    status, body = await api(client, "GET", PATH, merchant.jwt)
    assert status == 200, body
    return body["data"]["schedules"]


async def payouts_of(client, merchant):
    status, body = await api(client, "GET", "/dashboard/payouts", merchant.jwt)
    assert status == 200, body
    return body["data"]["payouts"]


# -- the routes -----------------------------------------------------------------------------------


async def test_create_list_patch_delete(env):
    client, merchant, devnet = env
    now = devnet.gateway.now()
    devnet.gateway.clock = lambda: now  # next_run_at is compared exactly below
    status, body = await create(client, merchant, coin="btc")
    assert status == 200, body
    made = body["data"]
    assert made["coin"] == "BTC" and made["destination"] == BTC_DEST and made["min_amount"] == "0.001"
    assert made["interval_sec"] == HOUR and made["enabled"] is True
    assert made["last_run_at"] is None and made["last_error"] is None and made["next_run_at"] == now + HOUR
    assert await schedules(client, merchant) == [made]
    status, body = await api(client, "PATCH", f"{PATH}/{made['id']}", merchant.jwt,
                             json={"enabled": False, "min_amount": "0.002", "interval_sec": 7200})
    assert status == 200, body
    assert body["data"] == {**made, "enabled": False, "min_amount": "0.002", "interval_sec": 7200}
    status, body = await api(client, "DELETE", f"{PATH}/{made['id']}", merchant.jwt)
    assert status == 200 and body["data"] == {"id": made["id"], "deleted": True}
    assert await schedules(client, merchant) == []
    assert (await api(client, "DELETE", f"{PATH}/{made['id']}", merchant.jwt))[0] == 404


@pytest.mark.parametrize("fields, field", [
    ({"interval_sec": 3599}, "interval_sec"),
    ({"interval_sec": 2592001}, "interval_sec"),
    ({"interval_sec": "daily"}, "interval_sec"),
    ({"min_amount": "0"}, "min_amount"),
    ({"min_amount": "-1"}, "min_amount"),
    ({"min_amount": "0.000000001"}, "min_amount"),  # finer than a satoshi
    ({"min_amount": "0.00000001"}, "min_amount"),  # below the coin's minimum payout
    ({"coin": "NOPE"}, "currency"),
    ({"destination": None}, "destination"),
])
async def test_bad_input_is_a_400_envelope_and_creates_nothing(env, fields, field):
    client, merchant, _ = env
    status, body = await create(client, merchant, **fields)
    assert status == 400, body
    assert body["data"] is None and body["error"]["type"] == "validation" and field in body["error"]["detail"]
    assert await schedules(client, merchant) == []


@pytest.mark.parametrize("destination, code", [("bc1qnope", "invalid_address"), (BURN_BTC, "burn_address")])
async def test_destination_is_validated_like_a_payout(env, destination, code):
    client, merchant, _ = env
    status, body = await create(client, merchant, destination=destination)
    assert status == 400 and body["error"]["code"] == code
    assert await schedules(client, merchant) == []


async def test_bad_patch_changes_nothing(env):
    client, merchant, _ = env
    made = (await create(client, merchant))[1]["data"]
    for change in ({}, {"interval_sec": 10}, {"min_amount": "abc"}, {"enabled": "yes"},
                   {"enabled": False, "interval_sec": 10**9}):
        status, body = await api(client, "PATCH", f"{PATH}/{made['id']}", merchant.jwt, json=change)
        assert status == 400 and body["error"]["type"] == "validation", (change, body)
    assert await schedules(client, merchant) == [made]


async def test_another_merchants_schedule_is_not_found(env):
    client, merchant, _ = env
    made = (await create(client, merchant))[1]["data"]
    other = await signup(client, "other@example.com")
    assert await schedules(client, other) == []
    assert (await api(client, "PATCH", f"{PATH}/{made['id']}", other.jwt, json={"enabled": False}))[0] == 404
    assert (await api(client, "DELETE", f"{PATH}/{made['id']}", other.jwt))[0] == 404
    assert (await api(client, "GET", PATH, merchant.merchant_key))[0] == 401
    assert await schedules(client, merchant) == [made]


# -- the tick -------------------------------------------------------------------------------------


async def test_a_due_schedule_pays_the_full_balance_once(env):
    client, merchant, devnet = env
    gateway = devnet.gateway
    made = (await create(client, merchant))[1]["data"]
    assert await run_schedules(gateway) == 0  # not due yet
    advance_clock(gateway, HOUR)
    assert await run_schedules(gateway) == 1
    assert await run_schedules(gateway) == 0  # the run is taken
    [payout] = await payouts_of(client, merchant)
    assert payout["amount"] == "0.0099" and payout["destination"] == BTC_DEST
    assert (await balance(client, merchant)).get("BTC", "0") in ("0", "0.00000000")
    [after] = await schedules(client, merchant)
    assert after["last_run_at"] == gateway.now() and after["next_run_at"] == made["next_run_at"] + HOUR
    assert after["last_error"] is None


async def test_below_min_amount_waits_and_fires_when_the_balance_is_enough(env):
    client, merchant, devnet = env
    gateway = devnet.gateway
    made = (await create(client, merchant, min_amount="0.015"))[1]["data"]
    advance_clock(gateway, HOUR + 5)
    assert await run_schedules(gateway) == 0
    [still] = await schedules(client, merchant)
    assert still["next_run_at"] == made["next_run_at"] and still["last_run_at"] is None
    await fund(client, merchant, devnet, "0.01")  # now 0.0198
    advance_clock(gateway, 60)
    assert await run_schedules(gateway) == 1
    [payout] = await payouts_of(client, merchant)
    assert payout["amount"] == "0.0198"


async def test_disabled_and_deleted_schedules_do_not_run(env):
    client, merchant, devnet = env
    first = (await create(client, merchant))[1]["data"]
    second = (await create(client, merchant))[1]["data"]
    await api(client, "PATCH", f"{PATH}/{first['id']}", merchant.jwt, json={"enabled": False})
    await api(client, "DELETE", f"{PATH}/{second['id']}", merchant.jwt)
    advance_clock(devnet.gateway, 2 * HOUR)
    assert await run_schedules(devnet.gateway) == 0
    assert await payouts_of(client, merchant) == []


async def test_a_failed_attempt_is_written_to_last_error_and_moves_no_money(env):
    client, merchant, devnet = env
    gateway = devnet.gateway
    made = (await create(client, merchant))[1]["data"]
    await fill_backlog(gateway, merchant.merchant_id, 500)
    before = await balance(client, merchant)
    advance_clock(gateway, HOUR)
    assert await run_schedules(gateway) == 0
    [after] = await schedules(client, merchant)
    assert after["last_error"] == "payout_backlog_too_large"
    assert after["next_run_at"] == made["next_run_at"] + HOUR  # advanced before the attempt
    assert await balance(client, merchant) == before


async def test_two_concurrent_ticks_pay_once(env, monkeypatch):
    client, merchant, devnet = env
    await create(client, merchant)
    advance_clock(devnet.gateway, HOUR)
    readers = hold_concurrent_reads(monkeypatch, tick.store, "due")  # both hold the due row before either claims
    results = await asyncio.gather(run_schedules(devnet.gateway), run_schedules(devnet.gateway))
    assert sorted(results) == [0, 1] and all(len(rows) == 1 for rows in readers)
    assert len(await payouts_of(client, merchant)) == 1


async def test_a_crash_between_advancing_and_paying_never_pays_twice(env, monkeypatch):
    client, merchant, devnet = env
    gateway = devnet.gateway
    made = (await create(client, merchant))[1]["data"]
    advance_clock(gateway, HOUR)

    async def crash(*args, **kwargs):
        raise KeyboardInterrupt  # the process dies: nothing after the claim runs

    monkeypatch.setattr(tick, "request_payout", crash)
    with pytest.raises(KeyboardInterrupt):
        await run_schedules(gateway)
    monkeypatch.undo()
    assert await run_schedules(gateway) == 0  # the restarted process finds the run taken
    assert await payouts_of(client, merchant) == []
    advance_clock(gateway, HOUR)
    assert await run_schedules(gateway) == 1  # the next run pays the whole balance
    [payout] = await payouts_of(client, merchant)
    assert payout["amount"] == "0.0099"
    [after] = await schedules(client, merchant)
    assert after["next_run_at"] == made["next_run_at"] + 2 * HOUR


async def test_the_payout_service_is_idempotent_per_key(env):
    client, merchant, devnet = env
    gateway = devnet.gateway
    first = await services.request_payout(gateway, merchant.merchant_id, coin="BTC", destination=BTC_DEST,
                                          amount=100_000, idempotency_key="sched:x:1")
    again = await services.request_payout(gateway, merchant.merchant_id, coin="BTC", destination=BTC_DEST,
                                          amount=100_000, idempotency_key="sched:x:1")
    assert again.id == first.id and again.replay and not first.replay
    assert len(await payouts_of(client, merchant)) == 1
    assert await services.available_balance(gateway, merchant.merchant_id, "BTC") == 990_000 - 100_000
    with pytest.raises(ValueError):
        await services.request_payout(gateway, merchant.merchant_id, coin="BTC", destination=BTC_DEST,
                                      amount=100_000, idempotency_key="key:mine")
