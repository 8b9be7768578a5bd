"""Concurrent payout, idempotency and refund requests never overdraw (both databases)."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from orbchain.core.ledger import book as ledger

from .support import api
from .test_payouts import BTC_DEST, balance, fund, in_flight, payout_env


@pytest.fixture
async def env(make_client, make_config):
    return await payout_env(make_client, make_config, rate_limits={"write_per_minute": 100000})


def payout_body(amount="0.0001", **extra):
    return {"currency": "BTC", "address": BTC_DEST, "amount": amount, **extra}


async def test_200_concurrent_payouts_never_overdraw(env):
    client, merchant, devnet = env
    await fund(client, merchant, devnet)  # 0.0099 BTC = 990_000 sat; 99 payouts of 10_000 fit
    answers = await asyncio.gather(*(
        api(client, "POST", "/v1/payout", merchant.payout_key, json=payout_body()) for _ in range(200)))
    statuses = Counter(status for status, _ in answers)
    assert set(statuses) <= {200, 400}, statuses
    assert all(body["error"]["code"] == "insufficient_balance" for status, body in answers if status == 400)
    created = statuses[200]
    assert created * 10_000 <= 990_000
    assert created == 99  # serialised, not merely safe: every payout that fits was taken
    rows = await devnet.gateway.db.fetch_all("SELECT amount FROM payouts")
    assert len(rows) == created and await in_flight(devnet.gateway) == created * 10_000
    assert await balance(client, merchant) == {}
    assert (await ledger.check_ledger(devnet.gateway.db)).ok


async def test_one_idempotency_key_sent_20_times_at_once(env):
    client, merchant, devnet = env
    await fund(client, merchant, devnet)
    answers = await asyncio.gather(*(
        api(client, "POST", "/v1/payout", merchant.payout_key, json=payout_body("0.001", idempotency_key="same-key-1"))
        for _ in range(20)))
    assert {status for status, _ in answers} == {200}
    track_ids = {body["data"]["track_id"] for _, body in answers}
    assert len(track_ids) == 1
    assert sum(1 for _, body in answers if body["data"].get("idempotent")) == 19
    assert await devnet.gateway.db.fetch_val("SELECT COUNT(*) FROM payouts") == 1
    assert await balance(client, merchant) == {"BTC": "0.0089"}


async def test_50_concurrent_refunds_never_exceed_the_payment(env):
    client, merchant, devnet = env
    track_id = await fund(client, merchant, devnet)  # 0.01 BTC paid
    await fund(client, merchant, devnet, "0.1")  # plenty of balance: only the payment bounds the refunds
    answers = await asyncio.gather(*(
        api(client, "POST", f"/v1/payment/{track_id}/refund", merchant.payout_key,
            json={"destination": BTC_DEST, "amount": "0.0007"}) for _ in range(50)))
    statuses = Counter(status for status, _ in answers)
    assert set(statuses) <= {200, 400}, statuses
    assert all(body["error"]["code"] == "refund_exceeds_payment" for status, body in answers if status == 400)
    assert statuses[200] == 14  # floor(0.01 / 0.0007)
    rows = await devnet.gateway.db.fetch_all("SELECT amount FROM payouts WHERE refund_of_payment_id = :t",
                                             {"t": track_id})
    assert sum(devnet.gateway.db.to_int(r["amount"]) for r in rows) <= 1_000_000
    assert (await ledger.check_ledger(devnet.gateway.db)).ok
