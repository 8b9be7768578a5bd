"""Unset fields read as null, never as a missing key, in every view of a resource (docs/decisions.md,
"Live API against the spec"): payments, their webhooks and list rows, deposits, payouts. Both databases."""

from __future__ import annotations

import pytest

from .support import api
from .test_payouts import BTC_DEST, create, outbox, payout_env


@pytest.fixture
async def env(make_client, make_config):
    return await payout_env(make_client, make_config)


def assert_null(view: dict, *names: str) -> None:
    for name in names:
        assert name in view and view[name] is None, (name, view)


async def test_unset_fields_are_null_in_every_view(env):
    client, merchant, devnet = env
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.01"})
    assert status == 200, body
    created = body["data"]
    assert_null(created, "order_id", "callback_url", "description", "user_id", "paid_at")
    track_id = created["track_id"]

    await devnet.pay("BTC", created["address"], "0.01")  # seen, not yet confirmed: Paying
    _, shown = await api(client, "GET", f"/v1/payment/{track_id}", merchant.merchant_key)
    assert shown["data"]["status"] == "Paying"
    assert_null(shown["data"], "order_id", "callback_url", "description", "user_id", "paid_at")
    _, listed = await api(client, "GET", "/v1/payment", merchant.merchant_key)
    assert_null(next(p for p in listed["data"]["payments"] if p["track_id"] == track_id), "paid_at")
    [paying_hook] = await outbox(devnet.gateway, "payment.paying")
    assert_null(paying_hook, "order_id", "paid_at")

    await devnet.mine(2)
    [credited_hook] = await outbox(devnet.gateway, "deposit.credited")
    assert_null(credited_hook, "order_id", "user_id")
    _, deposits = await api(client, "GET", "/v1/deposits", merchant.merchant_key)
    assert_null(deposits["data"]["deposits"][0], "order_id", "user_id")
    [paid_hook] = await outbox(devnet.gateway, "payment.paid")
    assert_null(paid_hook, "order_id")
    _, paid = await api(client, "GET", f"/v1/payment/{track_id}", merchant.merchant_key)
    assert paid["data"]["paid_at"] == paid_hook["paid_at"] is not None

    status, body = await create(client, merchant, "0.004", address=BTC_DEST)
    assert status == 200, body
    assert_null(body["data"], "tx_hash", "failure_reason")
    _, shown = await api(client, "GET", f"/v1/payout/{body['data']['track_id']}", merchant.payout_key)
    assert_null(shown["data"], "tx_hash", "failure_reason")
    assert set(shown["data"]) == set(body["data"])  # create and read show the same fields
