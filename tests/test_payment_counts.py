"""The lists' exact ``total`` read from counts the database keeps (core/payments/counts.py, m0048; issue 48).

Every test compares the kept counts with ``COUNT(*)`` over ``payments``
(``counts.mismatches``, one statement) after what changes them: creates through
the API, a cancel, expiry, pruning, SQL from outside the gateway, and many
concurrent creates for one merchant while folds run. On both databases; time
moves through ``gateway.clock``.
"""

from __future__ import annotations

import asyncio

import pytest

from orbchain.core.cli.ops import payment_counts_finding
from orbchain.core.payments import counts, pruning
from orbchain.core.payments.status import expire_payments
from orbchain.core.startup import build_gateway
from orbchain.testing.api import create_payment
from orbchain.testing.fixtures import open_shop

from .support import advance_clock, api, freeze_clock

DAY = 86400
RETENTION_DAYS = 30


async def listed_total(shop, **params) -> int:
    status, body = await api(shop.client, "GET", "/v1/payment", shop.merchant.merchant_key, params=params)
    assert status == 200, body
    return body["data"]["total"]


async def actual(db, merchant_id, **filters) -> int:
    where = "".join(f" AND {column} = :{column}" for column in filters)
    return int(await db.fetch_val(f"SELECT COUNT(*) FROM payments WHERE merchant_id = :m{where}",
                                  {"m": merchant_id, **filters}))


async def deltas(db) -> int:
    return int(await db.fetch_val("SELECT COUNT(*) FROM kept_count_deltas WHERE list = 'payments'"))


async def test_totals_stay_exact_through_creates_cancel_expiry_and_pruning(make_config, make_client):
    """Breaks caught: a total that misses a status change (the trigger on UPDATE), a deletion (pruning),
    or counts deltas twice when a fold lands between its two reads."""
    shop = await open_shop(make_config, make_client, payments={"unpaid_retention_days": RETENTION_DAYS})
    gateway, db, merchant_id = shop.gateway, shop.gateway.db, shop.merchant.merchant_id
    freeze_clock(gateway)
    made = [(await create_payment(shop.client, shop.merchant, coin, "0.5"))["track_id"]
            for coin in ("BTC", "BTC", "ETH", "ETH", "ETH")]
    status, body = await api(shop.client, "POST", "/v1/payment/invoice", shop.merchant.merchant_key,
                             json={"amount": "25", "currency": "USD"})
    assert status == 200, body
    assert await deltas(db) == 6  # not folded yet: the totals read the deltas
    assert await listed_total(shop) == 6
    assert await listed_total(shop, currency="ETH") == 3
    assert await listed_total(shop, type="invoice") == 1
    assert await counts.total(db, merchant_id, status="Waiting") == 6

    assert (await api(shop.client, "POST", f"/v1/payment/{made[0]}/cancel", shop.merchant.merchant_key))[0] == 200
    assert await counts.fold_all(db) == 8  # six creates, and the cancel's -1 Waiting and +1 Cancelled
    assert await deltas(db) == 0
    assert await listed_total(shop, status="Cancelled") == 1 and await listed_total(shop, status="Waiting") == 5
    assert await counts.mismatches(db) == []

    advance_clock(gateway, 2 * 3600)
    assert await expire_payments(gateway) == 5
    assert await listed_total(shop, status="Expired") == 5 == await actual(db, merchant_id, status="Expired")
    assert await listed_total(shop, status="Waiting") == 0
    assert await listed_total(shop, status="Expired", currency="ETH") == 3
    assert await counts.mismatches(db) == []

    advance_clock(gateway, (RETENTION_DAYS + 1) * DAY)
    assert await pruning.drain(gateway, pruning.prune_expired) == 6
    assert await listed_total(shop) == 0 == await actual(db, merchant_id)
    await counts.fold_all(db)
    assert await listed_total(shop) == 0 and await counts.mismatches(db) == []


async def test_an_order_id_filter_is_counted_over_its_index_and_combined_filters_exactly(make_config, make_client):
    shop = await open_shop(make_config, make_client)
    for order_id, coin in (("a", "BTC"), ("a", "ETH"), ("b", "ETH")):
        status, body = await api(shop.client, "POST", "/v1/payment/white-label", shop.merchant.merchant_key,
                                 json={"currency": coin, "amount": "0.5", "order_id": order_id})
        assert status == 200, body
    assert await listed_total(shop, order_id="a") == 2
    assert await listed_total(shop, order_id="a", currency="ETH") == 1
    assert await listed_total(shop, currency="ETH", status="Waiting", type="white_label") == 2
    assert await listed_total(shop, currency="LTC") == 0
    with pytest.raises(ValueError, match="order_id"):
        await counts.total(shop.gateway.db, shop.merchant.merchant_id, order_id="a")


async def test_sql_from_outside_the_gateway_is_counted_too(make_config, make_client):
    """The triggers, not the store code, keep the counts: an operator's UPDATE or DELETE in psql, or a
    plugin's statement, moves them as well. Breaks caught: counting in the service code only."""
    shop = await open_shop(make_config, make_client)
    db, merchant_id = shop.gateway.db, shop.merchant.merchant_id
    first, second = [(await create_payment(shop.client, shop.merchant, "BTC", "0.5"))["track_id"] for _ in range(2)]
    await db.execute("UPDATE payments SET status = 'Paid' WHERE track_id = :t", {"t": first})
    await db.execute("UPDATE payments SET description = 'no count moves' WHERE track_id = :t", {"t": second})
    assert await deltas(db) == 4  # two creates, then -Waiting +Paid; the description moved nothing
    await db.execute("UPDATE payments SET currency = 'ETH' WHERE track_id = :t", {"t": second})
    assert await counts.total(db, merchant_id, status="Paid") == 1
    assert await counts.total(db, merchant_id, currency="ETH") == 1
    await counts.fold_all(db)
    await db.execute("DELETE FROM payments WHERE track_id = :t", {"t": first})
    assert await counts.total(db, merchant_id) == 1 and await counts.mismatches(db) == []
    if db.is_postgres:
        await db.execute("TRUNCATE payments CASCADE")
        assert await counts.total(db, merchant_id) == 0 and await counts.mismatches(db) == []


async def test_many_concurrent_creates_for_one_merchant_while_folds_run(make_config, make_client):
    """On PostgreSQL the creates run on many connections at once: deltas are appended, never a counter row
    updated, so none waits on another's commit; folds running meanwhile must neither lose nor double a delta.
    Breaks caught: a fold that reads and deletes in two snapshots (a create committing between them)."""
    shop = await open_shop(make_config, make_client)
    db, merchant_id = shop.gateway.db, shop.merchant.merchant_id
    creates, done = 60, asyncio.Event()

    async def create() -> None:
        await create_payment(shop.client, shop.merchant, "ETH", "0.5")

    async def keep_folding() -> int:
        folded = 0
        while not done.is_set():
            folded += await counts.fold(db, batch=7)
            await asyncio.sleep(0)
        return folded

    folding = asyncio.ensure_future(keep_folding())
    await asyncio.gather(*(create() for _ in range(creates)))
    done.set()
    await folding
    assert await counts.total(db, merchant_id) == creates == await actual(db, merchant_id)
    assert await listed_total(shop, status="Waiting", currency="ETH") == creates
    assert await counts.mismatches(db) == []
    await counts.fold_all(db)
    assert await deltas(db) == 0 and await counts.total(db, merchant_id) == creates


async def test_doctor_reports_counts_that_drifted_and_rebuild_repairs_them(make_config, make_client):
    shop = await open_shop(make_config, make_client)
    db, merchant_id = shop.gateway.db, shop.merchant.merchant_id
    await create_payment(shop.client, shop.merchant, "BTC", "0.5")
    await counts.fold_all(db)
    assert (await payment_counts_finding(shop.gateway)).level == "OK"
    # As rows loaded with the triggers off would leave it (the history bench, pg_restore --disable-triggers).
    await db.execute("UPDATE kept_counts SET n = n + 2 WHERE list = 'payments' AND merchant_id = :m",
                     {"m": merchant_id})
    assert [(m["status"], m["difference"]) for m in await counts.mismatches(db)] == [("Waiting", 2)]
    finding = await payment_counts_finding(shop.gateway)
    assert finding.level == "FAIL" and "1 counted key(s)" in finding.detail
    await counts.rebuild(db)
    assert await counts.mismatches(db) == [] and await counts.total(db, merchant_id) == 1
    assert (await payment_counts_finding(shop.gateway)).level == "OK"


def test_the_fold_job_runs_every_few_seconds(make_config):
    job = build_gateway(make_config()).jobs[counts.JOB_NAME]
    assert job.seconds == counts.TICK_SECONDS <= 10 and job.func is counts.fold_job
