"""The hot path's queries, counted (issue 11): creating and reading a payment run only what the answer needs.

Counts, not times: a query added to these paths fails here instead of
slowing every request unnoticed. Statements of authentication and rate
limiting (``api_keys``, ``rate_limit_hits``) are left out; they have their own
tests and change on their own.
"""

from __future__ import annotations

import asyncio

import pytest

from orbchain.core.watching import addresses
from orbchain.web.keys import GATEWAY

from .support import Devnet, api, signup

OTHER_CONCERNS = ("api_keys", "rate_limit_hits")
WHITE_LABEL = {"currency": "BTC", "amount": "0.01"}


def _payment_path(log: list[str]) -> list[str]:
    """The statements of the request's own work, each cut to its first words."""
    kept = [q for q in log if not any(table in q for table in OTHER_CONCERNS)]
    return [" ".join(q.split()[:3]) for q in kept]


async def _logged(db, call):
    db.query_log = []
    try:
        result = await call()
        return result, _payment_path(db.query_log)
    finally:
        db.query_log = None


async def test_create_and_read_run_only_what_the_answer_needs(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    merchant = await signup(client)
    db = client.app[GATEWAY].db
    # The address and the payment are written together: one statement on PostgreSQL, one transaction on SQLite.
    write = (["WITH orbchain_w0 AS"] if db.is_postgres else
             ["BEGIN IMMEDIATE", "INSERT INTO deposit_addresses", "INSERT INTO payments", "COMMIT"])

    (status, first), log = await _logged(db, lambda: api(client, "POST", "/v1/payment/white-label",
                                                         merchant.merchant_key, json=WHITE_LABEL))
    assert status == 200, first
    # The first create reads the merchant (then cached in the process) and reserves a block of
    # address indexes, each in its own statement before the write.
    assert log == ["SELECT * FROM", "INSERT INTO counters", *write]

    (status, second), log = await _logged(db, lambda: api(client, "POST", "/v1/payment/white-label",
                                                          merchant.merchant_key, json=WHITE_LABEL))
    assert status == 200, second
    # Only the write: the merchant row is cached, nothing just written is read again.
    assert log == write

    track_id = second["data"]["track_id"]
    (status, read), log = await _logged(db, lambda: api(client, "GET", f"/v1/payment/{track_id}",
                                                        merchant.merchant_key))
    assert status == 200 and read["data"] == second["data"]
    assert log == ["SELECT p.*, EXISTS"]  # the payment, and whether it has deposits to list


async def test_a_settings_change_reaches_the_next_create(make_client, make_config):
    """The cached merchant row is dropped when a setting changes: the next create sees the change."""
    client = await make_client(make_config(scheduler={"enabled": False}))
    merchant = await signup(client)
    assert (await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key, json=WHITE_LABEL))[0] == 200
    status, body = await api(client, "PUT", "/dashboard/settings/coins", merchant.jwt, json={"accepted_coins": ["ETH"]})
    assert status == 200, body
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key, json=WHITE_LABEL)
    assert status == 400 and body["error"]["code"] == "currency_not_accepted", body


async def test_a_hosted_page_runs_one_query(make_client, make_config):
    """The page of an unpaid invoice: the payment, and whether it has deposits; the branding is cached."""
    client = await make_client(make_config(scheduler={"enabled": False}))
    merchant = await signup(client)
    status, body = await api(client, "POST", "/v1/payment/invoice", merchant.merchant_key, json=WHITE_LABEL)
    assert status == 200, body
    page = f"/pay/{body['data']['track_id']}"
    assert (await client.get(page)).status == 200  # the first view of the merchant's pages reads its brands
    db = client.app[GATEWAY].db
    response, log = await _logged(db, lambda: client.get(page))
    assert response.status == 200 and "<svg" in await response.text()
    assert log == ["SELECT p.*, EXISTS"]


async def test_reading_a_paid_payment_lists_its_deposits(make_client, make_config):
    """With deposits the read takes a second query, and shows them."""
    client = await make_client(make_config(scheduler={"enabled": False}))
    shop, merchant = Devnet(client), await signup(client)
    _, created = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                           json={"currency": "BTC", "amount": "0.001"})
    await shop.pay("BTC", created["data"]["address"], "0.001")
    db = shop.gateway.db
    path = f"/v1/payment/{created['data']['track_id']}"
    (status, read), log = await _logged(db, lambda: api(client, "GET", path, merchant.merchant_key))
    assert status == 200 and len(read["data"]["transactions"]) == 1
    assert log == ["SELECT p.*, EXISTS", "SELECT * FROM"]


async def test_index_blocks_never_overlap_between_processes(gateway):
    """Two processes (two block caches) on one database hand out disjoint indexes."""
    one, two = addresses.IndexBlocks(size=3), addresses.IndexBlocks(size=3)
    taken = await asyncio.gather(*(blocks.take(gateway, "addr:test") for _ in range(10) for blocks in (one, two)))
    assert len(set(taken)) == 20
    assert min(taken) == 0


async def test_index_blocks_are_not_reserved_inside_a_transaction(gateway):
    """A reservation rolled back with its transaction could be handed out twice; it is refused."""
    blocks = addresses.IndexBlocks()
    async with gateway.db.transaction():
        with pytest.raises(RuntimeError):
            await blocks.take(gateway, "addr:test")


async def test_concurrent_creates_of_one_merchant_get_distinct_addresses(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits={"enabled": False}))
    merchant = await signup(client)
    answers = await asyncio.gather(*(api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                                         json=WHITE_LABEL) for _ in range(25)))
    assert all(status == 200 for status, _ in answers), answers
    assert len({body["data"]["address"] for _, body in answers}) == 25
