"""Auto-settle (plugins/swaps settle.py, SPEC 4.2, 6.4) through the devnet venue, on both databases.

20 ETH per BTC, a 0.5 % venue fee and the platform's 1 % deposit fee: a
0.01 BTC payment credits a 0.0099 BTC net, which converts to
0.0099 * 20 * 0.995 = 0.19701 ETH. Worked out by hand, not by the code.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.plugins.swaps.engine import run_swaps
from orbchain.plugins.swaps.service import venue_account
from orbchain.plugins.swaps.venue_registry import venues_of

from .support import api
from .test_payouts import payout_env

SETTINGS = "/dashboard/settings/settlement-coin"


@pytest.fixture
async def env(make_client, make_config):
    client, merchant, devnet = await payout_env(make_client, make_config)
    venue = venues_of(devnet.gateway)["devnet"]
    venue.knobs.rates = {"BTC/ETH": Decimal("20")}
    venue.knobs.fee_bps = 50
    return client, merchant, devnet, venue


async def create(client, merchant, **extra):
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.01", **extra})
    return status, body


async def pay_and_confirm(devnet, payment):
    await devnet.pay("BTC", payment["address"], "0.01")
    await devnet.mine(devnet.gateway.coins.require("BTC").confirmations)


async def payment_of(client, merchant, track_id):
    status, body = await api(client, "GET", f"/v1/payment/{track_id}", merchant.merchant_key)
    assert status == 200, body
    return body["data"]


async def balances(client, merchant):
    status, body = await api(client, "GET", "/dashboard/balances", merchant.jwt)
    assert status == 200, body
    return {b["coin"]: b["amount"] for b in body["data"]["balances"] if Decimal(b["amount"])}


async def paid_webhooks(gateway, track_id):
    rows = await gateway.db.fetch_all("SELECT body FROM webhook_events WHERE event_type = 'payment.paid'")
    return [b for b in (json.loads(r["body"]) for r in rows) if b["track_id"] == track_id]


async def ledger_clean(gateway):
    report = await ledger.check_ledger(gateway.db)
    assert report.ok, report


async def test_a_payment_with_settlement_coin_is_paid_in_the_settlement_coin(env):
    client, merchant, devnet, _ = env
    gateway = devnet.gateway
    status, body = await create(client, merchant, settlement_coin="eth")
    assert status == 200, body
    payment = body["data"]
    await pay_and_confirm(devnet, payment)

    held = await payment_of(client, merchant, payment["track_id"])
    assert held["status"] == "Paying" and held["transactions"][0]["status"] == "CONFIRMED"  # converting
    assert await balances(client, merchant) == {}
    assert await ledger.balance(gateway.db, venue_account("devnet"), "BTC") == 990_000
    assert await paid_webhooks(gateway, payment["track_id"]) == []
    await ledger_clean(gateway)

    await run_swaps(gateway)
    paid = await payment_of(client, merchant, payment["track_id"])
    assert paid["status"] == "Paid" and paid["transactions"][0]["status"] == "CREDITED"
    assert await balances(client, merchant) == {"ETH": "0.19701"}
    assert await ledger.balance(gateway.db, ledger.PLATFORM_FEES, "BTC") == 10_000  # the fee once, in BTC
    [hook] = await paid_webhooks(gateway, payment["track_id"])
    assert (hook["settled_coin"], hook["settled_amount"], hook["swap_fallback"]) == ("ETH", "0.19701", False)
    status, body = await api(client, "GET", "/dashboard/swaps", merchant.jwt)
    [swap] = body["data"]["swaps"]
    assert swap["kind"] == "settle" and swap["track_id"] == payment["track_id"] and swap["status"] == "CONFIRMED"
    assert swap["to_amount_quoted"] == "0.19701"  # the rate locked at creation, applied to the net
    await ledger_clean(gateway)


async def test_the_quote_is_locked_at_creation(env):
    client, merchant, devnet, venue = env
    status, body = await create(client, merchant, settlement_coin="ETH")
    payment = body["data"]
    venue.knobs.rates = {"BTC/ETH": Decimal("19.9")}  # the market moves 0.5 %: within the threshold
    await pay_and_confirm(devnet, payment)
    await run_swaps(devnet.gateway)
    [swap] = (await api(client, "GET", "/dashboard/swaps", merchant.jwt))[1]["data"]["swaps"]
    assert swap["to_amount_quoted"] == "0.19701" and swap["actual_to_amount"] == "0.19602495"
    assert await balances(client, merchant) == {"ETH": "0.19602495"}  # 0.0099 * 19.9 * 0.995


async def test_a_venue_delivering_materially_less_falls_back_to_the_original_coin(env):
    client, merchant, devnet, venue = env
    status, body = await create(client, merchant, settlement_coin="ETH")
    payment = body["data"]
    venue.knobs.rates = {"BTC/ETH": Decimal("19")}  # 5 % below the locked quote
    await pay_and_confirm(devnet, payment)
    await run_swaps(devnet.gateway)
    paid = await payment_of(client, merchant, payment["track_id"])
    assert paid["status"] == "Paid"
    assert await balances(client, merchant) == {"BTC": "0.0099"}
    [hook] = await paid_webhooks(devnet.gateway, payment["track_id"])
    assert (hook["settled_coin"], hook["settled_amount"], hook["swap_fallback"]) == ("BTC", "0.0099", True)
    await ledger_clean(devnet.gateway)


async def test_a_failed_conversion_credits_the_original_coin(env):
    client, merchant, devnet, venue = env
    status, body = await create(client, merchant, settlement_coin="ETH")
    venue.knobs.fail_exchange = True
    await pay_and_confirm(devnet, body["data"])
    await run_swaps(devnet.gateway)
    await run_swaps(devnet.gateway)
    assert (await payment_of(client, merchant, body["data"]["track_id"]))["status"] == "Paid"
    assert await balances(client, merchant) == {"BTC": "0.0099"}
    [hook] = await paid_webhooks(devnet.gateway, body["data"]["track_id"])
    assert hook["swap_fallback"] is True
    await ledger_clean(devnet.gateway)


async def test_the_account_default_settlement_coin(env):
    client, merchant, devnet, _ = env
    status, body = await api(client, "GET", SETTINGS, merchant.jwt)
    assert status == 200 and body["data"] == {"default_settlement_coin": None}
    status, body = await api(client, "PUT", SETTINGS, merchant.jwt, json={"default_settlement_coin": "eth"})
    assert status == 200 and body["data"] == {"default_settlement_coin": "ETH"}
    status, body = await create(client, merchant)
    await pay_and_confirm(devnet, body["data"])
    await run_swaps(devnet.gateway)
    assert await balances(client, merchant) == {"ETH": "0.19701"}
    status, body = await api(client, "PUT", SETTINGS, merchant.jwt, json={"default_settlement_coin": None})
    assert status == 200 and body["data"] == {"default_settlement_coin": None}
    await ledger_clean(devnet.gateway)


@pytest.mark.parametrize("value", ["NOPE", "XMR", 5, ""])
async def test_bad_settlement_coins_are_a_400(env, value):
    client, merchant, devnet, _ = env
    status, body = await api(client, "PUT", SETTINGS, merchant.jwt, json={"default_settlement_coin": value})
    assert status == 400 and "default_settlement_coin" in body["error"]["detail"], body
    status, body = await create(client, merchant, settlement_coin=value)
    if value == "":
        return  # an empty field is absent
    assert status == 400 and "settlement_coin" in body["error"]["detail"], body
    status, body = await api(client, "GET", "/dashboard/payments", merchant.jwt)
    assert status == 200 and body["data"]["payments"] == [], body
    assert (await api(client, "GET", SETTINGS, merchant.jwt))[1]["data"]["default_settlement_coin"] is None


async def test_settlement_coin_on_a_static_address_is_a_400(env):
    client, merchant, _, _ = env
    status, body = await api(client, "POST", "/v1/payment/static-address", merchant.merchant_key,
                             json={"currency": "BTC", "settlement_coin": "ETH"})
    assert status == 400 and "settlement_coin" in body["error"]["detail"], body
    assert (await api(client, "GET", "/dashboard/payments", merchant.jwt))[1]["data"]["payments"] == []


async def test_venue_down_at_creation_refuses_the_payment(env):
    client, merchant, _, venue = env
    venue.knobs.unavailable = True
    status, body = await create(client, merchant, settlement_coin="ETH")
    assert status == 503 and body["error"]["code"] == "venue_unavailable", body


async def test_a_reorg_before_the_conversion_drops_it(env):
    from orbchain.chains.devnet import devnet_chain

    client, merchant, devnet, _ = env
    gateway = devnet.gateway
    status, body = await create(client, merchant, settlement_coin="ETH")
    payment = body["data"]
    tx_hash = await devnet.pay("BTC", payment["address"], "0.01")
    confirmations = gateway.coins.require("BTC").confirmations
    await devnet.mine(confirmations)
    chain = devnet_chain(gateway)
    await chain.reorg(confirmations, drop=[tx_hash])  # the deposit leaves the chain before the job ran
    await devnet.scan()
    await run_swaps(gateway)
    assert await balances(client, merchant) == {}
    assert await ledger.balance(gateway.db, venue_account("devnet"), "BTC") == 0
    [dropped] = (await api(client, "GET", "/dashboard/swaps", merchant.jwt))[1]["data"]["swaps"]
    assert dropped["status"] == "FAILED" and dropped["failure_reason"] == "deposit_reversed"
    await ledger_clean(gateway)
