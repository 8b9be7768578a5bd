"""POST /v1/payout/batch (SPEC 2.11, 4.3): items on their own, replays, batch-level errors."""

from __future__ import annotations

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.core.payouts import service as payouts

from .support import api, fill_backlog
from .test_payouts import BTC_DEST, balance, fund, payout_env, work

BURN_BTC = "1BitcoinEaterAddressDontSendf59kuE"


@pytest.fixture
async def env(make_client, make_config):
    client, merchant, devnet = await payout_env(make_client, make_config)
    await fund(client, merchant, devnet)  # 0.0099 BTC available
    return client, merchant, devnet


def item(external_id, amount="0.001", address=BTC_DEST, currency="BTC"):
    return {"currency": currency, "address": address, "amount": amount, "external_id": external_id}


async def batch(client, merchant, items):
    response = await client.post("/v1/payout/batch", headers=merchant.payout_key, json={"items": items})
    return response.status, await response.json()


async def test_each_item_stands_alone(env):
    client, merchant, devnet = env
    items = [
        item("a-1", "0.005"),
        item("a-2", "0.005"),  # only 0.0049 left: fails, and a-1 stays
        item("a-3", "0.001", address="bc1qnotanaddress"),
        item("a-4", "0.001", address=BURN_BTC),
        item("a-5", "0"),
        "not an object",
        {"currency": "BTC", "address": BTC_DEST, "amount": "0.001"},  # no external_id
        item("a-8", "0.004"),
        item("a-9", "0.001", currency="XMR", address="4" + "A" * 94),
    ]
    status, body = await batch(client, merchant, items)
    assert status == 200 and set(body) == {"data"}  # batch responses carry only data
    data = body["data"]
    assert data["summary"] == {"total": 9, "created": 2, "idempotent": 0, "failed": 7}
    results = data["results"]
    assert [r["index"] for r in results] == list(range(9))
    assert [r["status"] for r in results] == ["created", "failed", "failed", "failed", "failed", "failed", "failed",
                                               "created", "failed"]
    assert [r["error"] for r in (results[1], results[2], results[3])] == [
        "insufficient_balance", "invalid_address", "burn_address"]
    # Issue 29 item 9, break caught: a validation failure answered its sentence ("validation error:
    # external_id: is required"); every item error is a code, in the batch's shape.
    assert results[4]["error"] == "invalid_amount"
    assert results[5]["error"] == "invalid_item" and results[5]["external_id"] is None
    assert results[6]["error"] == "missing_external_id" and results[6]["external_id"] is None
    assert results[8]["error"] == "coin_not_supported"  # XMR is source-only
    assert all(set(r) == {"index", "external_id", "track_id", "status", "error"} for r in results)
    assert results[0]["track_id"] and results[0]["error"] is None and results[1]["track_id"] is None
    assert await balance(client, merchant) == {"BTC": "0.0009"}
    # The created items are ordinary payouts.
    view = (await api(client, "GET", f"/v1/payout/{results[7]['track_id']}", merchant.payout_key))[1]["data"]
    assert view["amount"] == "0.004" and view["status"] == "Confirming"
    await work(devnet.gateway)
    await devnet.mine(1)
    await work(devnet.gateway)
    view = (await api(client, "GET", f"/v1/payout/{results[7]['track_id']}", merchant.payout_key))[1]["data"]
    assert view["status"] == "Confirmed"
    assert (await ledger.check_ledger(devnet.gateway.db)).ok


async def test_external_id_replays_and_conflicts(env):
    client, merchant, _ = env
    _, first = await batch(client, merchant, [item("b-1"), item("b-2", "1")])
    assert first["data"]["summary"] == {"total": 2, "created": 1, "idempotent": 0, "failed": 1}
    _, again = await batch(client, merchant, [item("b-1"), item("b-2", "0.001"), item("b-3", "0.001")])
    results = again["data"]["results"]
    assert [r["status"] for r in results] == ["idempotent", "created", "created"]
    assert results[0]["track_id"] == first["data"]["results"][0]["track_id"]
    assert again["data"]["summary"] == {"total": 3, "created": 2, "idempotent": 1, "failed": 0}
    _, changed = await batch(client, merchant, [item("b-1", "0.002")])
    assert changed["data"]["results"][0]["error"] == "external_id_reused"
    assert await balance(client, merchant) == {"BTC": "0.0069"}
    # external_id and idempotency_key are separate namespaces.
    status, body = await api(client, "POST", "/v1/payout", merchant.payout_key,
                             json={**item(None), "idempotency_key": "b-1-b-1-b-1"})
    assert status == 200 and "idempotent" not in body["data"]


@pytest.mark.parametrize("body, message, code", [
    ({"items": []}, "batch is empty", "batch_empty"),
    ({}, "batch is empty", "batch_empty"),
    ({"items": [item(f"x-{i}") for i in range(101)]}, "batch exceeds max of 100", "batch_too_large"),
    ({"items": [item("same"), item("other"), item("same")]}, "duplicate external_id within batch",
     "duplicate_external_id"),
])
async def test_batch_level_errors(env, body, message, code):
    client, merchant, _ = env
    status, answer = await api(client, "POST", "/v1/payout/batch", merchant.payout_key, json=body)
    assert status == 400 and answer["message"] == message and answer["error"]["code"] == code
    assert answer["data"] is None
    assert await balance(client, merchant) == {"BTC": "0.0099"}


async def test_batch_bad_shapes_and_auth(env):
    client, merchant, _ = env
    status, body = await api(client, "POST", "/v1/payout/batch", merchant.payout_key, json={"items": "many"})
    assert status == 400 and "items" in body["error"]["detail"]
    assert (await api(client, "POST", "/v1/payout/batch", {}, json={"items": [item("z")]}))[0] == 401
    assert (await api(client, "POST", "/v1/payout/batch", merchant.merchant_key, json={"items": [item("z")]}))[0] == 401
    status, body = await batch(client, merchant, [item(f"ok-{i}", "0.0001") for i in range(100)])
    assert status == 200 and body["data"]["summary"]["created"] == 99  # the 100th overdraws 0.0099 by 0.0001


async def test_backlog_breaker_fails_items(env):
    client, merchant, devnet = env
    await fill_backlog(devnet.gateway, merchant.merchant_id, payouts.BACKLOG_LIMIT - 1)
    _, body = await batch(client, merchant, [item("c-1"), item("c-2")])
    assert [(r["status"], r["error"]) for r in body["data"]["results"]] == [
        ("created", None), ("failed", "payout_backlog_too_large")]
