"""``GET /v1/payment/{track_id}`` answers from a per-process cache keyed on the rows (issue 11), never stale.

Each read is checked against the envelope built from scratch from the rows
read at that moment, after every kind of change: deposits, confirmations,
a status change, a cancellation, a column written behind the API's back.
Both databases.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from orbchain.core.payments import service as svc
from orbchain.web.keys import GATEWAY
from orbchain.web.payment_answer import CACHE

from .test_pay_page import merchant_key, new_invoice
from .test_pay_page_cache import add_unhashable_column, deposit, written


@pytest.fixture
async def shop(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    return client, await merchant_key(client, "answer-cache@example.com")


async def read(client: Any, key: str, track_id: str, path: str = "/v1/payment/{}") -> dict[str, Any]:
    """One read through the API, checked against the view built fresh from the rows now."""
    response = await client.get(path.format(track_id), headers={"merchant_api_key": key})
    assert response.status == 200, await response.text()
    body = orjson.loads(await response.read())
    gateway = client.app[GATEWAY]
    assert body["data"] == orjson.loads(orjson.dumps(await svc.show_payment(gateway, None, track_id)))
    return body["data"]


async def test_reads_follow_deposits_confirmations_and_status(shop):
    client, key = shop
    invoice = await new_invoice(client, key, accepted_coins=["BTC"])
    track_id = invoice["track_id"]
    for _ in range(3):
        assert (await read(client, key, track_id))["status"] == "Waiting"
    assert len(client.app[GATEWAY].services[CACHE]) == 1  # three reads, one answer built
    await deposit(client, invoice, blocks=1)
    paying = await read(client, key, track_id)
    assert paying["status"] == "Paying" and paying["transactions"][0]["confirmations"] == 1
    await deposit(client, invoice, blocks=2)
    paid = await read(client, key, track_id)
    assert paid["status"] == "Paid" and paid["transactions"][0]["confirmations"] >= 2


async def test_a_change_behind_the_api_shows_at_once(shop):
    """Rows written by another process or a job: the answer's key is every column; on PostgreSQL the cached rows
    are dropped by the triggers' notification (m0047)."""
    client, key = shop
    invoice = await new_invoice(client, key, accepted_coins=["BTC"])
    track_id = invoice["track_id"]
    await deposit(client, invoice, blocks=1)
    await read(client, key, track_id)
    gateway = client.app[GATEWAY]
    await written(gateway, track_id, "UPDATE deposits SET confirmations = 0 WHERE track_id = :t", {"t": track_id})
    assert (await read(client, key, track_id))["transactions"][0]["confirmations"] == 0
    await written(gateway, track_id, "UPDATE payments SET description = :d WHERE track_id = :t",
                  {"d": "changed", "t": track_id})
    assert (await read(client, key, track_id))["description"] == "changed"



async def test_a_cancellation_answers_the_cancelled_state(shop):
    client, key = shop
    invoice = await new_invoice(client, key)
    track_id = invoice["track_id"]
    assert (await read(client, key, track_id))["status"] == "Waiting"
    response = await client.post(f"/v1/payment/{track_id}/cancel", headers={"merchant_api_key": key})
    assert response.status == 200 and (await response.json())["data"]["status"] == "Cancelled"
    assert (await read(client, key, track_id))["status"] == "Cancelled"


async def test_another_merchants_payment_is_404_even_when_cached(shop):
    client, key = shop
    invoice = await new_invoice(client, key)
    await read(client, key, invoice["track_id"])
    other = await merchant_key(client, "answer-cache-other@example.com")
    response = await client.get(f"/v1/payment/{invoice['track_id']}", headers={"merchant_api_key": other})
    assert response.status == 404


async def test_an_unhashable_column_answers_without_the_cache(shop, monkeypatch):
    client, key = shop
    invoice = await new_invoice(client, key)
    add_unhashable_column(monkeypatch)
    for _ in range(2):
        assert (await read(client, key, invoice["track_id"]))["track_id"] == invoice["track_id"]
    assert len(client.app[GATEWAY].services[CACHE]) == 0
