"""The whole payment journey on devnet, on SQLite and PostgreSQL.

Signup, every payment type, pay on devnet, Waiting -> Paying -> Paid, the
balance credited minus the fee, signed webhooks received and verified, a
receipt verified with a separate Ed25519 path, deposits listed, and another
merchant kept out with 404s.
"""

from __future__ import annotations

import base64

import pytest
from nacl.exceptions import BadSignatureError
from nacl.signing import VerifyKey

from orbchain.core.ledger import book as ledger
from orbchain.core.ledger.accounts import PLATFORM_FEES
from orbchain.core.events.webhooks import deliver_due

from .support import Devnet, WebhookReceiver, api, signup


@pytest.fixture
async def receiver():
    hook = WebhookReceiver()
    yield hook
    await hook.close()


@pytest.fixture
async def shop(make_client, make_config, receiver):
    client = await make_client(make_config(scheduler={"enabled": False}))
    merchant = await signup(client, "shop@example.com")
    url = await receiver.start()
    status, body = await api(client, "PUT", "/dashboard/settings/webhook", merchant.jwt, json={"webhook_url": url})
    assert status == 200, body
    return client, merchant, body["data"]["webhook_secret"], Devnet(client)


async def test_white_label_payment_end_to_end(shop, receiver):
    client, merchant, secret, devnet = shop
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "LTC", "amount": "0.5", "order_id": "order-1"})
    assert status == 200, body
    payment = body["data"]
    assert payment["status"] == "Waiting" and payment["pay_amount"] == "0.5"
    assert payment["address"].startswith("ltc1q") and payment["expires_at"] - payment["created_at"] == 30 * 60

    tx = await devnet.pay("LTC", payment["address"], "0.5")
    status, body = await api(client, "GET", f"/v1/payment/{payment['track_id']}", merchant.merchant_key)
    assert body["data"]["status"] == "Paying"
    assert body["data"]["transactions"][0]["tx_hash"] == tx

    await devnet.mine(5)  # LTC needs 6 confirmations
    _, body = await api(client, "GET", f"/v1/payment/{payment['track_id']}", merchant.merchant_key)
    assert body["data"]["status"] == "Paying" and body["data"]["transactions"][0]["confirmations"] == 5
    await devnet.mine(1)
    _, body = await api(client, "GET", f"/v1/payment/{payment['track_id']}", merchant.merchant_key)
    paid = body["data"]
    assert paid["status"] == "Paid" and paid["paid_at"]
    assert paid["transactions"] == [{"tx_hash": tx, "coin": "LTC", "amount": "0.5", "amount_usd": "40.00",
                                     "status": "CREDITED", "confirmations": 6}]

    # Balance: 0.5 minus the operator's default 1 % fee; the fee sits in the platform account.
    _, body = await api(client, "GET", "/v1/general/account/balance", merchant.general_key)
    assert body["data"]["balances"] == [{"coin": "LTC", "amount": "0.495"}]
    assert await ledger.balance(devnet.gateway.db, PLATFORM_FEES, "LTC") == 500_000
    assert (await ledger.check_ledger(devnet.gateway.db)).ok

    # Webhooks: signed with the webhook secret, Paying then Paid, deposit credited.
    await deliver_due(devnet.gateway)
    bodies = receiver.verified(secret)
    # Deliveries run concurrently: arrival order is not promised (docs/webhooks.md).
    assert sorted(b["event_type"] for b in bodies) == ["deposit.credited", "payment.paid", "payment.paying"]
    paid_hook = receiver.of_type("payment.paid")[0]
    assert paid_hook["status"] == "Paid" and paid_hook["track_id"] == payment["track_id"]
    assert paid_hook["order_id"] == "order-1" and paid_hook["transactions"][0]["status"] == "CREDITED"
    headers = next(r["headers"] for r in receiver.requests if r["body"]["event_type"] == "payment.paid")
    assert headers["X-Event-Id"] == paid_hook["event_id"] and len(paid_hook["event_id"]) == 26
    credited = receiver.of_type("deposit.credited")[0]
    assert credited["amount"] == "0.5" and credited["fee"] == "0.005" and credited["net_amount"] == "0.495"
    # The webhook and GET /v1/deposits describe the same deposit alike (issue 19).
    _, listed = await api(client, "GET", "/v1/deposits", merchant.merchant_key)
    row = next(d for d in listed["data"]["deposits"] if d["tx_hash"] == tx)
    assert credited["order_id"] == row["order_id"] == "order-1" and credited["track_id"] == row["track_id"]
    assert {k: credited[k] for k in row} == row


async def test_receipt_verifies_with_a_separate_ed25519_path(shop):
    client, merchant, _, devnet = shop
    _, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                        json={"currency": "BTC", "amount_fiat": "30", "fiat_currency": "USD"})
    payment = body["data"]
    assert payment["rate_locked"] == "60000" and payment["pay_amount"] == "0.0005"
    status, body = await api(client, "GET", f"/v1/payment/{payment['track_id']}/receipt", merchant.merchant_key)
    assert status == 400 and body["error"]["code"] == "payment_not_paid"
    tx = await devnet.pay("BTC", payment["address"], "0.0005")
    await devnet.mine(2)
    status, body = await api(client, "GET", f"/v1/payment/{payment['track_id']}/receipt", merchant.merchant_key)
    assert status == 200, body
    data = body["data"]
    _, pinned = await api(client, "GET", "/v1/common/receipt-public-key", {})
    assert data["public_key"] == pinned["data"]["public_key"] and data["algorithm"] == "Ed25519"
    # Verify over ``canonical`` exactly as received, with the pinned key.
    VerifyKey(base64.b64decode(pinned["data"]["public_key"])).verify(
        data["canonical"].encode("utf-8"), base64.b64decode(data["signature"]))
    receipt = data["receipt"]
    assert receipt["v"] == 1 and receipt["type"] == "payment_receipt" and receipt["status"] == "Paid"
    assert receipt["merchant_id"] == merchant.merchant_id and receipt["amount_fiat"] == "30"
    assert receipt["deposits"][0]["tx_hash"] == tx and receipt["deposits"][0]["amount"] == "0.0005"
    assert data["canonical"] == data["canonical"].replace(" ", "")  # no whitespace
    # A tampered canonical does not verify.
    with pytest.raises(BadSignatureError):
        VerifyKey(base64.b64decode(data["public_key"])).verify(
            data["canonical"].replace("Paid", "Paix").encode(), base64.b64decode(data["signature"]))


async def test_invoice_and_static_address_journeys(shop):
    client, merchant, _, devnet = shop
    status, body = await api(client, "POST", "/v1/payment/invoice", merchant.merchant_key,
                             json={"amount": "60", "currency": "USD", "return_url": "https://shop.example/thanks"})
    assert status == 200, body
    invoice = body["data"]
    assert invoice["payment_url"].endswith(f"/pay/{invoice['track_id']}")
    assert invoice["pay_currency"] == "BTC" and invoice["pay_amount"] == "0.001"
    assert invoice["expires_at"] - invoice["created_at"] == 3600
    await devnet.pay("BTC", invoice["address"], "0.001")
    await devnet.mine(2)
    _, body = await api(client, "GET", f"/v1/payment/{invoice['track_id']}", merchant.merchant_key)
    assert body["data"]["status"] == "Paid"

    status, body = await api(client, "POST", "/v1/payment/static-address", merchant.merchant_key,
                             json={"currency": "ETH", "user_id": "customer-7"})
    static = body["data"]
    assert status == 200 and static["type"] == "static_address" and static["amount"] is None
    assert static["expires_at"] is None and static["address"].startswith("0x")
    _, again = await api(client, "POST", "/v1/payment/static-address", merchant.merchant_key,
                         json={"currency": "ETH", "user_id": "customer-7"})
    assert again["data"]["address"] == static["address"]
    _, token = await api(client, "POST", "/v1/payment/static-address", merchant.merchant_key,
                         json={"currency": "USDT_ERC20", "user_id": "customer-7"})
    assert token["data"]["address"] == static["address"]  # one EVM address per (merchant, user)

    first = await devnet.pay("ETH", static["address"], "0.1")
    await devnet.mine(12)
    second = await devnet.pay("ETH", static["address"], "0.2")
    await devnet.mine(12)
    _, body = await api(client, "GET", f"/v1/payment/{static['track_id']}", merchant.merchant_key)
    assert body["data"]["status"] == "Paid"
    assert [t["tx_hash"] for t in body["data"]["transactions"]] == [first]  # never accumulates later ones
    _, body = await api(client, "GET", "/v1/deposits", merchant.merchant_key, params={"user_id": "customer-7"})
    rows = {d["tx_hash"]: d for d in body["data"]["deposits"]}
    assert rows[second]["status"] == "Credited" and rows[second]["credited"] is True
    assert rows[second]["address"] == static["address"] and rows[first]["track_id"] == static["track_id"]
    _, body = await api(client, "GET", "/v1/general/account/balance", merchant.general_key)
    assert {b["coin"]: b["amount"] for b in body["data"]["balances"]} == {"BTC": "0.00099", "ETH": "0.297"}


async def test_another_merchant_gets_404(shop, make_client):
    client, merchant, _, devnet = shop
    _, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                        json={"currency": "BTC", "amount": "0.01"})
    track_id = body["data"]["track_id"]
    other = await signup(client, "other@example.com")
    for path in (f"/v1/payment/{track_id}", f"/v1/payment/{track_id}/receipt"):
        status, body = await api(client, "GET", path, other.merchant_key)
        assert status == 404 and body["message"] == "not found", path
    status, _ = await api(client, "GET", f"/dashboard/payments/{track_id}", other.jwt)
    assert status == 404
    status, _ = await api(client, "POST", f"/v1/payment/{track_id}/cancel", other.merchant_key)
    assert status == 404
    _, body = await api(client, "GET", "/v1/payment", other.merchant_key)
    assert body["data"]["total"] == 0
    status, _ = await api(client, "GET", f"/v1/payment/{track_id}", {"merchant_api_key": "nope"})
    assert status == 401


async def test_a_scoped_keys_webhook_gets_the_events_of_its_payments(shop, receiver):
    """SPEC 5.2, 6.1: payment.* and deposit.credited of a payment made with a key go to the key's URL,
    signed with the key's secret; the account's URL gets nothing of it. A callback_url still wins."""
    client, merchant, _, devnet = shop
    key_receiver = WebhookReceiver()
    try:
        url = await key_receiver.start()
        status, key = await api(client, "POST", "/dashboard/api-keys", merchant.jwt,
                                json={"label": "shop", "scopes": ["payment:create"], "webhook_url": url})
        assert status == 200, key
        headers = {"merchant_api_key": key["data"]["api_key"]}
        status, body = await api(client, "POST", "/v1/payment/white-label", headers,
                                 json={"currency": "LTC", "amount": "0.5", "order_id": "by-key"})
        assert status == 200, body
        await devnet.pay("LTC", body["data"]["address"], "0.5")
        await devnet.mine(6)
        await deliver_due(devnet.gateway)
        hooks = key_receiver.verified(key["data"]["webhook_secret"])
        assert sorted(h["event_type"] for h in hooks) == ["deposit.credited", "payment.paid", "payment.paying"]
        assert {h["track_id"] for h in hooks} == {body["data"]["track_id"]} and receiver.requests == []

        # A per-payment callback_url is more specific than the key's URL.
        status, body = await api(client, "POST", "/v1/payment/white-label", headers,
                                 json={"currency": "LTC", "amount": "0.1", "callback_url": str(receiver.server.make_url("/hook"))})
        assert status == 200, body
        await devnet.pay("LTC", body["data"]["address"], "0.1")
        await devnet.mine(6)
        await deliver_due(devnet.gateway)
        assert len(key_receiver.requests) == 3 and len(receiver.requests) == 3
    finally:
        await key_receiver.close()
