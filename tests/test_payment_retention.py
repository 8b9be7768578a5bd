"""The merchants' own API payments left unpaid are pruned after ``[payments] unpaid_retention_days``, only when
the operator opted in, in small batches while creates carry on (core/payments/pruning.py; issue 48 item 3).
On both databases; time moves through ``gateway.clock``."""

from __future__ import annotations

import asyncio

import pytest

from orbchain.core.infra.config import ConfigError, load_config
from orbchain.core.payments import pruning
from orbchain.core.payments.status import expire_payments
from orbchain.testing.api import create_payment
from orbchain.testing.fixtures import open_shop

from .support import api, freeze_clock

DAY = 86400
RETENTION_DAYS = 30
OLD = 10_000  # expired or cancelled API payments past the retention, no deposit: all of them go
BATCH = 200  # small, so creates interleave with many batches


async def _payments(db, prefix: str, merchant_id: str, count: int, status: str, expires_at: int,
                    key_id: str | None) -> None:
    """``count`` payments ``<prefix><i>`` in one statement (portable SQL)."""
    await db.execute(
        f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {count})"
        " INSERT INTO payments (track_id, merchant_id, type, status, currency, pay_currency, key_id, expires_at,"
        " created_at, updated_at) SELECT :p || i, :m, 'INVOICE', :s, 'ETH', 'ETH', :k, :e, :c, :e FROM n",
        {"p": prefix, "m": merchant_id, "s": status, "k": key_id, "e": expires_at, "c": expires_at - 3600})


async def _deposit(db, track_id: str, merchant_id: str, at: int) -> None:
    await db.execute(
        "INSERT INTO deposits (id, chain, coin, network, tx_hash, output_index, address, amount, merchant_id,"
        " track_id, threshold, status, created_at, updated_at) VALUES (:i, 'devnet', 'DEV', 'devnet', :i, 0,"
        " 'addr', :a, :m, :t, 1, 'DETECTED', :at, :at)",
        {"i": f"dep-{track_id}", "a": db.amount_param(5), "m": merchant_id, "t": track_id, "at": at})


async def _track_ids(db) -> set[str]:
    return {r["track_id"] for r in await db.fetch_all("SELECT track_id FROM payments")}


async def test_only_unpaid_api_payments_past_the_retention_go_and_creates_carry_on(make_config, make_client):
    """Breaks caught: the merchants' expired payments grew forever once an operator asked for a bound; a prune
    that takes a payment with a deposit, one still within the retention, a Paid or Waiting one, one a plugin
    minted (no key), or the ledger's rows; a prune whose locks make a concurrent create fail."""
    shop = await open_shop(make_config, make_client, payments={"unpaid_retention_days": RETENTION_DAYS})
    gateway, db, merchant_id = shop.gateway, shop.gateway.db, shop.merchant.merchant_id
    now = freeze_clock(gateway)
    past, recent = now - (RETENTION_DAYS + 1) * DAY, now - (RETENTION_DAYS - 1) * DAY
    await _payments(db, "old-expired-", merchant_id, OLD - 100, "Expired", past, "key")
    await _payments(db, "old-cancelled-", merchant_id, 100, "Cancelled", past, "key")
    kept = {"deposited": ("Expired", past, "key"), "young": ("Expired", recent, "key"),
            "paid": ("Paid", past, "key"), "waiting": ("Waiting", past, "key"), "minted": ("Expired", past, None)}
    for prefix, (status, expires_at, key_id) in kept.items():
        await _payments(db, prefix, merchant_id, 1, status, expires_at, key_id)
    await _deposit(db, "deposited1", merchant_id, past)
    ledger = await db.fetch_val("SELECT COUNT(*) FROM ledger_postings")

    created = []

    async def creates() -> None:
        """Payments through the API, each must succeed (``create_payment`` asserts a 200)."""
        for _ in range(20):
            created.append((await create_payment(shop.client, shop.merchant, "ETH", "0.5"))["track_id"])

    pruned, _ = await asyncio.gather(pruning.drain(gateway, pruning.prune_expired, batch=BATCH), creates())

    assert pruned == OLD
    left = await _track_ids(db)
    assert not any(t.startswith("old-") for t in left)
    assert {f"{prefix}1" for prefix in kept} | set(created) <= left and len(created) == 20
    assert await db.fetch_val("SELECT COUNT(*) FROM deposits") == 1
    assert await db.fetch_val("SELECT COUNT(*) FROM ledger_postings") == ledger
    assert await pruning.drain(gateway, pruning.prune_expired, batch=BATCH) == 0


async def _expired_api_payment(shop) -> tuple[str, int]:
    """A payment created through the API, and its expiry."""
    track_id = (await create_payment(shop.client, shop.merchant, "ETH", "0.5"))["track_id"]
    expires_at = await shop.gateway.db.fetch_val("SELECT expires_at FROM payments WHERE track_id = :t", {"t": track_id})
    return track_id, int(expires_at)


async def _status_after(shop, track_id: str, at: int) -> object:
    """Move the clock to ``at``, run the expiry and the prune job; the payment's status then (or the HTTP one)."""
    shop.gateway.clock = lambda: at
    await expire_payments(shop.gateway)
    await shop.gateway.jobs[pruning.JOB_NAME].func(shop.gateway)
    status, body = await api(shop.client, "GET", f"/v1/payment/{track_id}", shop.merchant.merchant_key)
    return body["data"]["status"] if status == 200 else status


async def test_an_api_payment_goes_by_the_job_once_past_its_retention(make_config, make_client):
    """Breaks caught: a job that never runs the new kind; a retention counted from creation, not expiry."""
    shop = await open_shop(make_config, make_client, payments={"unpaid_retention_days": RETENTION_DAYS})
    track_id, expires_at = await _expired_api_payment(shop)
    assert await _status_after(shop, track_id, expires_at + DAY) == "Expired"
    assert await _status_after(shop, track_id, expires_at + RETENTION_DAYS * DAY - 60) == "Expired"
    assert await _status_after(shop, track_id, expires_at + RETENTION_DAYS * DAY + 60) == 404


async def test_by_default_an_api_payment_is_kept_for_ever(merchant_shop):
    """Breaks caught: a default that deletes the merchants' payments (the SPEC lets them look one up by id)."""
    shop = merchant_shop
    track_id, expires_at = await _expired_api_payment(shop)
    assert await _status_after(shop, track_id, expires_at + 10 * 365 * DAY) == "Expired"


def test_the_setting_is_off_by_default_and_refuses_a_short_window():
    defaults = load_config(None, environ={})
    assert defaults.payments.unpaid_retention_days == 0
    assert defaults.with_overrides(payments={"unpaid_retention_days": 365}).payments.unpaid_retention_days == 365
    for days in (1, 29, -1):
        with pytest.raises(ConfigError, match="unpaid_retention_days"):
            defaults.with_overrides(payments={"unpaid_retention_days": days})
