"""POST /v1/payment/:track_id/refund: paid payments only, bounded by what they brought in."""

from __future__ import annotations

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.core.types.chains import BroadcastError

from .support import api, signup
from .test_payouts import BTC_DEST, balance, fund, payout_env, payout_row, work

BURN_BTC = "1BitcoinEaterAddressDontSendf59kuE"


@pytest.fixture
async def env(make_client, make_config):
    client, merchant, devnet = await payout_env(make_client, make_config)
    track_id = await fund(client, merchant, devnet)  # a Paid payment of 0.01 BTC
    await fund(client, merchant, devnet)  # more balance, so the fee is no obstacle: 0.0198 available
    return client, merchant, devnet, track_id


async def refund(client, merchant, track_id, **body):
    body.setdefault("destination", BTC_DEST)
    return await api(client, "POST", f"/v1/payment/{track_id}/refund", merchant.payout_key, json=body)


async def test_partial_then_full_refunds(env):
    client, merchant, devnet, track_id = env
    status, body = await refund(client, merchant, track_id, amount="0.004", description="damaged")
    assert status == 200, body
    data = body["data"]
    assert data["refund_of_payment_id"] == track_id and data["status"] == "Confirming" and data["coin"] == "BTC"
    assert data["amount"] == "0.004" and data["refunded_total"] == "0.004" and data["refundable_remaining"] == "0.006"
    assert "idempotent" not in data
    status, body = await refund(client, merchant, track_id, amount="0.0061")
    assert status == 400 and body["error"]["code"] == "refund_exceeds_payment"
    assert body["error"]["detail"] == {"refundable": "0.006"}
    status, body = await refund(client, merchant, track_id)  # the rest
    assert status == 200 and body["data"]["amount"] == "0.006" and body["data"]["refundable_remaining"] == "0"
    status, body = await refund(client, merchant, track_id)
    assert status == 400 and body["error"]["code"] == "refund_exceeds_payment"
    assert await balance(client, merchant) == {"BTC": "0.0098"}  # 0.0198 minus the 0.01 returned
    view = (await api(client, "GET", f"/v1/payout/{data['track_id']}", merchant.payout_key))[1]["data"]
    assert view["refund_of_payment_id"] == track_id
    await work(devnet.gateway)
    await devnet.mine(1)
    await work(devnet.gateway)
    row = await payout_row(devnet.gateway, data["track_id"])
    assert row["status"] == "Confirmed" and row["description"] == "damaged"
    assert (await ledger.check_ledger(devnet.gateway.db)).ok


async def test_amount_usd_uses_the_current_price(env):
    client, merchant, _, track_id = env
    status, body = await refund(client, merchant, track_id, amount_usd="60")  # BTC at 60000 USD
    assert status == 200 and body["data"]["amount"] == "0.001"
    status, body = await refund(client, merchant, track_id, amount_usd="0.000001")
    assert status == 400 and "amount_usd" in body["error"]["detail"]
    # Issue 42 item 8: a USD amount is cents at most (this one was refunded at 60.001 USD's price before).
    status, body = await refund(client, merchant, track_id, amount_usd="60.001")
    assert status == 400 and body["error"]["detail"] == {"amount_usd": "has more than 2 decimal places"}, body
    status, body = await refund(client, merchant, track_id, amount="0.001", amount_usd="60")
    assert status == 400 and body["error"]["type"] == "validation"


async def test_only_paid_payments_of_this_merchant(env):
    client, merchant, _, track_id = env
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.01"})
    waiting = body["data"]["track_id"]
    status, body = await refund(client, merchant, waiting, amount="0.001")
    assert status == 400 and body["error"]["code"] == "payment_not_refundable"
    assert (await refund(client, merchant, "unknown", amount="0.001"))[0] == 404
    other = await signup(client, "other@example.com")
    assert (await refund(client, other, track_id, amount="0.001"))[0] == 404
    assert (await api(client, "POST", f"/v1/payment/{track_id}/refund", merchant.merchant_key,
                      json={"destination": BTC_DEST}))[0] == 401


async def test_destination_and_amount_are_validated_like_payouts(env):
    client, merchant, _, track_id = env
    status, body = await refund(client, merchant, track_id, destination="bc1qnotanaddress")
    assert status == 400 and body["error"]["code"] == "invalid_address"
    status, body = await refund(client, merchant, track_id, destination=BURN_BTC)
    assert status == 400 and body["error"]["code"] == "burn_address"
    status, body = await refund(client, merchant, track_id, amount="0.00001")
    assert status == 400 and "at least 0.0001" in body["error"]["detail"]["amount"]
    status, body = await refund(client, merchant, track_id, amount="0")
    assert status == 400 and body["error"]["type"] == "validation"
    status, body = await api(client, "POST", f"/v1/payment/{track_id}/refund", merchant.payout_key, json={})
    assert status == 400 and "destination" in body["error"]["detail"]


async def test_external_id_replays(env):
    client, merchant, _, track_id = env
    _, first = await refund(client, merchant, track_id, amount="0.002", external_id="rf-1")
    status, again = await refund(client, merchant, track_id, amount="0.002", external_id="rf-1")
    assert status == 200 and again["data"]["idempotent"] is True
    assert again["data"]["track_id"] == first["data"]["track_id"] and again["data"]["refunded_total"] == "0.002"
    status, body = await refund(client, merchant, track_id, amount="0.003", external_id="rf-1")
    assert status == 409 and body["error"]["code"] == "external_id_reused"
    # A full refund replayed after the payment is exhausted still answers with the first refund.
    _, full = await refund(client, merchant, track_id, external_id="rf-2")
    status, replay = await refund(client, merchant, track_id, external_id="rf-2")
    assert status == 200 and replay["data"]["track_id"] == full["data"]["track_id"]


async def test_a_failed_refund_can_be_refunded_again(env, monkeypatch):
    client, merchant, devnet, track_id = env

    async def refuse(signed):
        raise BroadcastError("fee too low", permanent=True)

    monkeypatch.setattr(devnet.adapter, "broadcast", refuse)
    _, body = await refund(client, merchant, track_id)
    await work(devnet.gateway)
    assert (await payout_row(devnet.gateway, body["data"]["track_id"]))["status"] == "Failed"
    assert await balance(client, merchant) == {"BTC": "0.0198"}
    status, body = await refund(client, merchant, track_id, amount="0.01")
    assert status == 200 and body["data"]["refundable_remaining"] == "0"


async def test_refund_goes_out_in_the_pay_currency(make_client, make_config):
    client, merchant, devnet = await payout_env(make_client, make_config)
    await fund(client, merchant, devnet, "0.1")
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "ETH", "amount": "0.5", "pay_currency": "BTC"})
    assert status == 200, body
    await devnet.pay("BTC", body["data"]["address"], body["data"]["pay_amount"])
    await devnet.mine(2)
    status, answer = await refund(client, merchant, body["data"]["track_id"])
    assert status == 200 and answer["data"]["coin"] == "BTC" and answer["data"]["amount"] == body["data"]["pay_amount"]


async def test_refunds_racing_a_deposit_credit_on_the_same_payment(make_client, make_config):
    """Credits lock the payment before the ledger, like refunds: they queue instead of deadlocking."""
    import asyncio

    client, merchant, devnet = await payout_env(make_client, make_config, rate_limits={"write_per_minute": 100000})
    await fund(client, merchant, devnet, amount="0.05")  # balance for the refunds
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.01"})
    payment = body["data"]
    await devnet.pay("BTC", payment["address"], "0.01")
    await devnet.mine(1)
    await devnet.pay("BTC", payment["address"], "0.005")  # attached while the payment is Paying
    await devnet.mine(1)  # the first deposit credits: Paid; the second has 1 of 2 confirmations
    assert (await api(client, "GET", f"/v1/payment/{payment['track_id']}", merchant.merchant_key))[1]["data"][
        "status"] == "Paid"

    async def one_refund():
        return await refund(client, merchant, payment["track_id"], amount="0.001")

    results = await asyncio.gather(*(one_refund() for _ in range(20)), devnet.mine(1))
    statuses = [status for status, _ in results[:-1]]
    assert set(statuses) <= {200, 400} and statuses.count(200) >= 10
    refunded = sum(1 for status in statuses if status == 200) * 100_000
    credited = await devnet.gateway.db.fetch_all(
        "SELECT amount FROM deposits WHERE track_id = :t AND status = 'CREDITED'", {"t": payment["track_id"]})
    assert refunded <= sum(devnet.gateway.db.to_int(r["amount"]) for r in credited) == 1_500_000
    assert (await ledger.check_ledger(devnet.gateway.db)).ok
