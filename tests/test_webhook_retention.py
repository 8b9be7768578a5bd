"""The webhook history is pruned past its retention, in small batches, while the gateway keeps working
(core/events/retention.py; issue 48 item 3). On both databases."""

from __future__ import annotations

import asyncio

import pytest

from orbchain.core.events import retention
from orbchain.core.events.outbox import enqueue_event
from orbchain.core.infra.config import ConfigError, load_config
from orbchain.testing.api import create_payment

from .support import freeze_clock

DAY = 86400
OLD = 10_000  # delivery attempts past the retention, each of its own delivered event
BATCH = 200  # small, so creates interleave with many batches


async def _old_history(db, merchant_id: str, at: int) -> None:
    """``OLD`` delivered events with one attempt each, all at ``at``, in two statements (portable SQL)."""
    numbers = f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {OLD})"
    await db.execute(
        f"{numbers} INSERT INTO webhook_events (event_id, merchant_id, event_type, logical_key, body,"
        " event_timestamp, status, attempts, created_at, updated_at, delivered_at)"
        " SELECT 'old' || i, :m, 'payment.paid', 'old:' || i, '{}', :t, 'delivered', 1, :t, :t, :t FROM n",
        {"m": merchant_id, "t": at})
    await db.execute(
        f"{numbers} INSERT INTO webhook_deliveries (event_id, merchant_id, url, status_code, success, attempt,"
        " created_at) SELECT 'old' || i, :m, 'https://example.com/hook', 200, TRUE, 1, :t FROM n",
        {"m": merchant_id, "t": at})


async def _event(db, event_id: str, merchant_id: str, status: str, at: int, attempt_at: int | None) -> None:
    await db.execute(
        "INSERT INTO webhook_events (event_id, merchant_id, event_type, logical_key, body, event_timestamp,"
        " status, attempts, next_attempt_at, created_at, updated_at)"
        " VALUES (:e, :m, 'payment.paid', :e, '{}', :t, :s, 1, :t, :t, :t)",
        {"e": event_id, "m": merchant_id, "s": status, "t": at})
    if attempt_at is not None:
        await db.execute(
            "INSERT INTO webhook_deliveries (event_id, merchant_id, success, attempt, created_at)"
            " VALUES (:e, :m, FALSE, 1, :t)", {"e": event_id, "m": merchant_id, "t": attempt_at})


async def test_only_history_past_its_retention_goes_and_creates_carry_on(merchant_shop):
    """Breaks caught: the history grew forever; a prune that takes a pending event (still to be sent), an
    event whose last attempt is recent, or anything younger than the retention; a prune whose locks make a
    concurrent create fail."""
    shop = merchant_shop
    gateway, db, merchant_id = shop.gateway, shop.gateway.db, shop.merchant.merchant_id
    now = freeze_clock(gateway)
    retention_days = gateway.config.webhooks.retention_days
    assert retention_days == 90
    past, recent = now - (retention_days + 1) * DAY, now - (retention_days - 1) * DAY
    await _old_history(db, merchant_id, past)
    await _event(db, "old-pending", merchant_id, "pending", past, None)  # never sent yet: kept
    await _event(db, "old-retried", merchant_id, "failed", past, recent)  # its last attempt is recent: kept
    await _event(db, "young", merchant_id, "delivered", recent, recent)  # within the retention: kept

    payments, events = [], []

    async def creates() -> None:
        """Payments through the API and outbox rows, each must succeed (``create_payment`` asserts a 200)."""
        for i in range(20):
            payments.append((await create_payment(shop.client, shop.merchant, "ETH", "0.5"))["track_id"])
            async with db.transaction():
                events.append(await enqueue_event(gateway, merchant_id=merchant_id, event_type="payment.paid",
                                                  body={"i": i}, logical_key=f"during:{i}"))

    pruned, _ = await asyncio.gather(retention.prune_history(gateway, batch=BATCH), creates())

    assert pruned == 2 * OLD  # every old attempt and every old finished event
    left = {r["event_id"] for r in await db.fetch_all("SELECT event_id FROM webhook_events")}
    assert {"old-pending", "old-retried", "young"} <= left
    assert not any(e.startswith("old") and e not in ("old-pending", "old-retried") for e in left)
    assert await db.fetch_val("SELECT COUNT(*) FROM webhook_deliveries WHERE created_at < :c",
                              {"c": now - retention_days * DAY}) == 0
    assert await db.fetch_val("SELECT COUNT(*) FROM webhook_deliveries WHERE event_id IN ('old-retried', 'young')") == 2
    stored = {r["track_id"] for r in await db.fetch_all("SELECT track_id FROM payments")}
    assert len(payments) == len(events) == 20 and set(payments) <= stored and set(events) <= left


def test_retention_setting_refuses_a_window_too_short_to_refuse_duplicates():
    defaults = load_config(None, environ={})
    assert defaults.with_overrides(webhooks={"retention_days": 0}).webhooks.retention_days == 0
    with pytest.raises(ConfigError, match="retention_days"):
        defaults.with_overrides(webhooks={"retention_days": 3})
