"""Deposit engine edge cases (docs/decisions.md), on devnet, on both databases."""

from __future__ import annotations

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.core.watching.deposits import expire_payments
from orbchain.core.events.webhooks import deliver_due

from .support import Devnet, WebhookReceiver, api, signup


@pytest.fixture
async def env(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, plugin={"devnet": {"block_seconds": 1}}))
    merchant = await signup(client)
    return client, merchant, Devnet(client)


async def white_label(client, merchant, amount="0.01", currency="BTC", **extra):
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": currency, "amount": amount, **extra})
    assert status == 200, body
    return body["data"]


async def payment(client, merchant, track_id):
    return (await api(client, "GET", f"/v1/payment/{track_id}", merchant.merchant_key))[1]["data"]


async def balance(client, merchant):
    body = (await api(client, "GET", "/v1/general/account/balance", merchant.general_key))[1]
    return {b["coin"]: b["amount"] for b in body["data"]["balances"]}


async def test_underpayment_stays_paying_then_expires_but_is_credited(env):
    client, merchant, devnet = env
    wl = await white_label(client, merchant, "0.01", lifetime=1)
    await devnet.pay("BTC", wl["address"], "0.004")
    await devnet.mine(2)
    assert (await payment(client, merchant, wl["track_id"]))["status"] == "Paying"
    assert await balance(client, merchant) == {"BTC": "0.00396"}
    devnet.gateway.clock = lambda: wl["expires_at"] + 1
    assert await expire_payments(devnet.gateway) == 1
    view = await payment(client, merchant, wl["track_id"])
    assert view["status"] == "Expired" and view["transactions"][0]["status"] == "CREDITED"


async def test_an_expired_payment_sends_its_webhook_once(env):
    """Issue 46: expiry sent no webhook, so a merchant's order stayed reserved until someone polled."""
    client, merchant, devnet = env
    receiver = WebhookReceiver()
    url = await receiver.start()
    try:
        await devnet.gateway.db.execute("UPDATE merchants SET webhook_url = :u, webhook_secret = :s WHERE id = :m",
                                        {"u": url, "s": "s" * 32, "m": merchant.merchant_id})
        wl = await white_label(client, merchant, "0.01", lifetime=1, order_id="order-7")
        devnet.gateway.clock = lambda: wl["expires_at"] + 1
        assert await expire_payments(devnet.gateway) == 1
        assert await expire_payments(devnet.gateway) == 0
        await deliver_due(devnet.gateway)
        bodies = [request["body"] for request in receiver.requests]
        expired = [body for body in bodies if body["event_type"] == "payment.expired"]
        assert len(expired) == 1, bodies
        assert expired[0]["track_id"] == wl["track_id"] and expired[0]["status"] == "Expired"
        assert expired[0]["order_id"] == "order-7"
    finally:
        await receiver.close()


async def test_several_deposits_add_up_and_overpayment_is_credited_in_full(env):
    client, merchant, devnet = env
    wl = await white_label(client, merchant, "0.01")
    await devnet.pay("BTC", wl["address"], "0.006")
    await devnet.pay("BTC", wl["address"], "0.006")
    await devnet.mine(2)
    view = await payment(client, merchant, wl["track_id"])
    assert view["status"] == "Paid" and len(view["transactions"]) == 2
    assert await balance(client, merchant) == {"BTC": "0.01188"}  # 0.012 minus 1 %


async def test_payment_after_expiry_is_credited_without_a_payment(env):
    client, merchant, devnet = env
    wl = await white_label(client, merchant, "0.01", lifetime=1)
    devnet.gateway.clock = lambda: wl["expires_at"] + 5
    await expire_payments(devnet.gateway)
    tx = await devnet.pay("BTC", wl["address"], "0.01")
    await devnet.mine(2)
    view = await payment(client, merchant, wl["track_id"])
    assert view["status"] == "Expired" and view["transactions"] == []
    body = (await api(client, "GET", "/v1/deposits", merchant.merchant_key, params={"address": wl["address"]}))[1]
    row = body["data"]["deposits"][0]
    assert row["tx_hash"] == tx and row["track_id"] is None and row["status"] == "Credited"
    assert await balance(client, merchant) == {"BTC": "0.0099"}


async def test_paid_in_time_but_confirmed_after_expiry_is_paid(env):
    client, merchant, devnet = env
    wl = await white_label(client, merchant, "0.01", lifetime=1)
    await devnet.pay("BTC", wl["address"], "0.01")
    devnet.gateway.clock = lambda: wl["expires_at"] + 5
    assert await expire_payments(devnet.gateway) == 0  # still confirming
    await devnet.mine(2)
    assert (await payment(client, merchant, wl["track_id"]))["status"] == "Paid"


async def test_manual_cancel_and_expiry_job(env):
    client, merchant, devnet = env
    first = await white_label(client, merchant, "0.01")
    status, body = await api(client, "POST", f"/v1/payment/{first['track_id']}/cancel", merchant.merchant_key)
    assert status == 200 and body["data"]["status"] == "Cancelled"
    status, body = await api(client, "POST", f"/v1/payment/{first['track_id']}/cancel", merchant.merchant_key)
    assert status == 200 and body["data"]["status"] == "Cancelled"  # idempotent
    paying = await white_label(client, merchant, "0.01")
    await devnet.pay("BTC", paying["address"], "0.01")
    status, body = await api(client, "POST", f"/v1/payment/{paying['track_id']}/cancel", merchant.merchant_key)
    assert status == 400 and body["error"]["code"] == "payment_not_cancellable"
    waiting = await white_label(client, merchant, "0.01", lifetime=2)
    devnet.gateway.clock = lambda: waiting["expires_at"]
    await expire_payments(devnet.gateway)
    assert (await payment(client, merchant, waiting["track_id"]))["status"] == "Expired"
    # A deposit to the cancelled payment's address is credited, not attached.
    await devnet.pay("BTC", first["address"], "0.001")
    await devnet.mine(2)
    assert (await payment(client, merchant, first["track_id"]))["transactions"] == []


async def test_reorg_before_crediting_takes_the_deposit_back(env):
    client, merchant, devnet = env
    wl = await white_label(client, merchant, "0.1", currency="LTC")
    tx = await devnet.pay("LTC", wl["address"], "0.1")
    await devnet.mine(3)
    assert (await payment(client, merchant, wl["track_id"]))["transactions"][0]["confirmations"] == 3
    await devnet.chain.reorg(3, drop=[tx])
    await devnet.scan()
    view = await payment(client, merchant, wl["track_id"])
    assert view["transactions"][0]["confirmations"] == 0 and view["status"] == "Paying"
    await devnet.mine(10)
    assert (await payment(client, merchant, wl["track_id"]))["transactions"][0]["status"] == "PENDING"
    # Gone from chain and mempool for longer than the adapter's grace period: FAILED.
    later = devnet.gateway.now() + devnet.adapter.drop_after_seconds + 1
    devnet.gateway.clock = lambda: later
    await devnet.scan()
    assert (await payment(client, merchant, wl["track_id"]))["transactions"][0]["status"] == "FAILED"
    assert (await payment(client, merchant, wl["track_id"]))["status"] == "Waiting"
    assert await balance(client, merchant) == {}


async def test_reorg_after_crediting_reverses_with_an_event(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    merchant = await signup(client)
    hook = WebhookReceiver()
    url = await hook.start()
    try:
        secret = (await api(client, "PUT", "/dashboard/settings/webhook", merchant.jwt,
                            json={"webhook_url": url}))[1]["data"]["webhook_secret"]
        devnet = Devnet(client)
        wl = await white_label(client, merchant, "0.01")
        tx = await devnet.pay("BTC", wl["address"], "0.01")
        await devnet.mine(2)
        assert (await payment(client, merchant, wl["track_id"]))["status"] == "Paid"
        assert await balance(client, merchant) == {"BTC": "0.0099"}
        await devnet.chain.reorg(2, drop=[tx])
        await devnet.scan()
        view = await payment(client, merchant, wl["track_id"])
        assert view["status"] == "Paying" and view["transactions"][0]["status"] == "PENDING"
        assert await balance(client, merchant) == {}
        assert (await ledger.check_ledger(devnet.gateway.db)).ok
        await deliver_due(devnet.gateway)
        reversed_hooks = [b for b in hook.verified(secret) if b["event_type"] == "deposit.reversed"]
        assert reversed_hooks and reversed_hooks[0]["tx_hash"] == tx
        # The payment stepped back from Paid: the merchant hears it with the status it now has.
        reverted = [b for b in hook.verified(secret) if b["event_type"] == "payment.reverted"]
        assert [(b["track_id"], b["status"]) for b in reverted] == [(wl["track_id"], "Paying")]
        # Re-broadcast: the same transaction confirms again and is credited once more.
        await devnet.chain.pay(devnet.gateway.coins.require("BTC"), wl["address"], 1_000_000)
        await devnet.mine(2)
        assert (await payment(client, merchant, wl["track_id"]))["status"] == "Paid"
        assert await balance(client, merchant) == {"BTC": "0.0099"}
    finally:
        await hook.close()


async def test_reorg_keeping_the_transaction_recredits_nothing_twice(env):
    client, merchant, devnet = env
    wl = await white_label(client, merchant, "0.01")
    await devnet.pay("BTC", wl["address"], "0.01")
    await devnet.mine(2)
    await devnet.chain.reorg(2)  # the transaction returns to the mempool, then is mined again
    await devnet.scan()
    assert (await payment(client, merchant, wl["track_id"]))["status"] == "Paying"
    await devnet.mine(2)
    view = await payment(client, merchant, wl["track_id"])
    assert view["status"] == "Paid" and len(view["transactions"]) == 1
    assert await balance(client, merchant) == {"BTC": "0.0099"}
    assert (await ledger.check_ledger(devnet.gateway.db)).ok


async def test_rescanning_records_each_output_once(env):
    client, merchant, devnet = env
    wl = await white_label(client, merchant, "0.01")
    await devnet.pay("BTC", wl["address"], "0.01")
    for _ in range(3):
        await devnet.scan()
    await devnet.gateway.db.execute("DELETE FROM chain_blocks")  # forget progress: rescan from genesis
    await devnet.mine(2)
    await devnet.scan()
    rows = await devnet.gateway.db.fetch_all("SELECT * FROM deposits")
    assert len(rows) == 1 and rows[0]["credit_count"] == 1
    assert await balance(client, merchant) == {"BTC": "0.0099"}


async def test_merchant_thresholds_are_never_below_the_floor(env):
    client, merchant, devnet = env
    status, _ = await api(client, "PUT", "/dashboard/settings/confirmations", merchant.jwt, json={"BTC": 4})
    assert status == 200
    wl = await white_label(client, merchant, "0.01")
    await devnet.pay("BTC", wl["address"], "0.01")
    await devnet.mine(3)
    assert (await payment(client, merchant, wl["track_id"]))["status"] == "Paying"
    await devnet.mine(1)
    assert (await payment(client, merchant, wl["track_id"]))["status"] == "Paid"


async def test_fee_percent_per_account(env):
    client, merchant, devnet = env
    await devnet.gateway.db.execute("UPDATE merchants SET fee_percent = '0.5' WHERE id = :m",
                                    {"m": merchant.merchant_id})
    wl = await white_label(client, merchant, "1", currency="LTC")
    await devnet.pay("LTC", wl["address"], "1")
    await devnet.mine(6)
    assert await balance(client, merchant) == {"LTC": "0.995"}
