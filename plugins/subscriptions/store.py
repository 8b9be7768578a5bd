"""The plugin's three tables: plans, subscriptions and subscription invoices.

Only this module writes SQL. Every merchant-facing read names the merchant,
so another merchant's plan or subscription is simply not found (404).
Row locks (``FOR UPDATE`` on PostgreSQL; SQLite serialises writers) are
always taken subscription first, then invoice, so two transactions never
wait on each other in opposite orders.
"""

from __future__ import annotations

import json
import secrets
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ...api import (
    KeptList, delete_rows_naming, found, insert_statement, merchant_row, merchant_row_count, merchant_rows, update_row,
)

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

Row = Mapping[str, Any]

ACTIVE, PAUSED, CANCELLED, FAILED = "ACTIVE", "PAUSED", "CANCELLED", "FAILED"
SPEC_STATUSES = (ACTIVE, PAUSED, CANCELLED, FAILED)  # SPEC 3.4: all a subscription (API, webhooks) ever shows
# A customer-page enrolment before its first invoice is paid, and one whose first invoice lapsed: not yet a
# subscription, so neither is ever shown by the subscriptions API or its webhooks (issue 42 item 9).
PENDING, EXPIRED = "PENDING", "EXPIRED"
STATUSES = (*SPEC_STATUSES, PENDING, EXPIRED)
ENDED = (CANCELLED, FAILED, EXPIRED)  # nothing is billed again

# Which rows are subscriptions (SPEC 2.13, 3.4), as SQL over ``subscriptions s`` and as a test of one row:
# every enrolment the merchant made (API, dashboard: ``enrol_ip_hash`` is written only for customer-page
# enrolments, migration m0002), and a customer-page enrolment once a period of it was paid (it turned
# ACTIVE then). An unpaid page enrolment (PENDING, EXPIRED, or cancelled before paying) is only an
# enrolment: the subscriptions API lists none, answers 404 for one, and no subscription webhook names one.
IS_SUBSCRIPTION = "(s.enrol_ip_hash IS NULL OR s.current_period_end IS NOT NULL)"
# Its negation as the partial index ``subscriptions_enrolling`` (m0005) holds it: the few rows a total leaves out.
ENROLLING = "s.enrol_ip_hash IS NOT NULL AND s.current_period_end IS NULL"
KEPT = KeptList("subscriptions", ("status",))  # m0005: every row per merchant and status, kept by the database


def is_subscription(row: Row) -> bool:
    """``IS_SUBSCRIPTION`` for one subscriptions row."""
    return row["enrol_ip_hash"] is None or row["current_period_end"] is not None
# Invoice rows: claimed (payment not yet known to exist), open, then paid or expired.
MINTING, OPEN, INV_PAID, INV_EXPIRED = "minting", "open", "paid", "expired"

_SUBSCRIPTION_SELECT = (
    "SELECT s.*, p.label AS plan_label, p.amount_usd AS plan_amount_usd, p.interval_sec AS plan_interval_sec,"
    " p.brand_id AS plan_brand_id, i.pay_url AS open_pay_url, i.track_id AS open_track_id"
    " FROM subscriptions s JOIN subscription_plans p ON p.id = s.plan_id"
    " LEFT JOIN subscription_invoices i ON i.id = s.pending_invoice_id AND i.status = 'open'")


def coins_of(plan: Row) -> list[str]:
    return list(json.loads(plan["accepted_coins"]))


# -- plans ------------------------------------------------------------------------------------------


async def count_plans(gateway: "Gateway", merchant_id: str) -> int:
    return await merchant_row_count(gateway, "subscription_plans", merchant_id)


async def insert_plan(gateway: "Gateway", merchant_id: str, *, label: str, amount_usd: str, interval_sec: int,
                      accepted_coins: Sequence[str], brand_id: str | None = None) -> Row:
    now = gateway.now()
    plan_id = "plan_" + secrets.token_hex(8)
    row: dict[str, Any] = {"id": plan_id, "merchant_id": merchant_id, "label": label,
           "amount_usd": amount_usd, "interval_sec": interval_sec, "accepted_coins": json.dumps(list(accepted_coins)),
           "brand_id": brand_id, "enabled": True, "created_at": now, "updated_at": now}
    await gateway.db.execute(insert_statement("subscription_plans", row), row)
    return await plan_of(gateway, merchant_id, plan_id)


async def plan_of(gateway: "Gateway", merchant_id: str, plan_id: str) -> Row:
    return await merchant_row(gateway, "subscription_plans", merchant_id, plan_id)


async def public_plan(gateway: "Gateway", plan_id: str) -> Row | None:
    """Any merchant's plan by id (the customer page knows only the id)."""
    return await gateway.db.fetch_one("SELECT * FROM subscription_plans WHERE id = :i", {"i": plan_id})


async def lock_plan(gateway: "Gateway", plan_id: str) -> Row | None:
    """The plan row, locked for the caller's transaction: page enrolments to one plan go one at a time."""
    return await gateway.db.fetch_one(f"SELECT * FROM subscription_plans WHERE id = :i{gateway.db.for_update}",
                                      {"i": plan_id})


async def plans_of(gateway: "Gateway", merchant_id: str) -> list[Row]:
    return await merchant_rows(gateway, "subscription_plans", merchant_id)


async def update_plan(gateway: "Gateway", merchant_id: str, plan_id: str, changes: Mapping[str, Any]) -> Row:
    values = dict(changes)
    if "accepted_coins" in values:
        values["accepted_coins"] = json.dumps(list(values["accepted_coins"]))
    values["updated_at"] = gateway.now()
    await update_row(gateway, "subscription_plans", plan_id, values, merchant_id=merchant_id)
    return await plan_of(gateway, merchant_id, plan_id)


# -- subscriptions ------------------------------------------------------------------------------------


async def insert_subscription(gateway: "Gateway", row: Mapping[str, Any]) -> None:
    await gateway.db.execute(insert_statement("subscriptions", row), row)


async def claim_keyed_subscription(gateway: "Gateway", row: Mapping[str, Any]) -> bool:
    """Store ``row`` unless its merchant already used its ``idempotency_key``; whether it was stored."""
    claimed = await gateway.db.fetch_val(
        insert_statement("subscriptions", row) + " ON CONFLICT DO NOTHING RETURNING id", row)
    return claimed is not None


async def subscription_by_key(gateway: "Gateway", merchant_id: str, key: str) -> Row | None:
    """The subscription a merchant created with idempotency key ``key``, if any."""
    return await gateway.db.fetch_one(f"{_SUBSCRIPTION_SELECT} WHERE s.merchant_id = :m AND s.idempotency_key = :k",
                                      {"m": merchant_id, "k": key})


async def subscription_of(gateway: "Gateway", merchant_id: str, subscription_id: str) -> Row:
    """A subscription with its plan's label, price and interval and its open invoice's pay URL; 404 for
    another merchant's, and for an enrolment that is not a subscription yet (``IS_SUBSCRIPTION``)."""
    return found(await gateway.db.fetch_one(
        f"{_SUBSCRIPTION_SELECT} WHERE s.id = :i AND s.merchant_id = :m AND {IS_SUBSCRIPTION}",
        {"i": subscription_id, "m": merchant_id}))


async def subscription_row(gateway: "Gateway", subscription_id: str) -> Row:
    """Any merchant's subscription (the tick's own look-up), as ``subscription_of`` shows it."""
    return found(await gateway.db.fetch_one(f"{_SUBSCRIPTION_SELECT} WHERE s.id = :i",
                                            {"i": subscription_id}))


async def subscription_by_token_hash(gateway: "Gateway", token_hash: str) -> Row | None:
    return await gateway.db.fetch_one(f"{_SUBSCRIPTION_SELECT} WHERE s.token_hash = :h", {"h": token_hash})


async def list_subscriptions(gateway: "Gateway", merchant_id: str, *, status: str | None, customer_ref: str | None,
                             limit: int, offset: int) -> tuple[list[Row], int]:
    """The merchant's subscriptions (``IS_SUBSCRIPTION``: no unpaid enrolment), newest first, and their count."""
    clauses, values = ["s.merchant_id = :m", IS_SUBSCRIPTION], {"m": merchant_id}
    if status is not None:
        clauses.append("s.status = :status")
        values["status"] = status
    if customer_ref is not None:
        clauses.append("s.customer_ref = :ref")
        values["ref"] = customer_ref
    where = " AND ".join(clauses)
    total = await _listed_total(gateway, merchant_id, status, customer_ref, where, values)
    rows = await gateway.db.fetch_all(
        f"{_SUBSCRIPTION_SELECT} WHERE {where} ORDER BY s.created_at DESC, s.id DESC LIMIT :limit OFFSET :offset",
        {**values, "limit": limit, "offset": offset})
    return rows, int(total)


async def _listed_total(gateway: "Gateway", merchant_id: str, status: str | None, customer_ref: str | None,
                        where: str, values: dict[str, Any]) -> int:
    """The list's exact total: a customer's subscriptions are few (``COUNT(*)`` over ``subscriptions_customer``);
    otherwise the kept count by status less the unpaid page enrolments (``subscriptions_enrolling``), in one
    statement so an enrolment paid meanwhile is counted once."""
    if customer_ref is not None:
        return int(await gateway.db.fetch_val(f"SELECT COUNT(*) FROM subscriptions s WHERE {where}", values))
    kept, kept_values = KEPT.summed(merchant_id, {"status": status}, tag="_kept")
    status_clause = "" if status is None else " AND s.status = :status"
    return int(await gateway.db.fetch_val(
        f"SELECT {kept} - (SELECT COUNT(*) FROM subscriptions s WHERE s.merchant_id = :m AND {ENROLLING}"
        f"{status_clause})", {**values, **kept_values}))


async def status_counts(gateway: "Gateway", merchant_id: str) -> dict[tuple[str, bool], int]:
    """How many rows the merchant has per (status, whether it is a subscription: ``IS_SUBSCRIPTION``)."""
    rows = await gateway.db.fetch_all(
        f"SELECT s.status, CASE WHEN {IS_SUBSCRIPTION} THEN 1 ELSE 0 END AS listed, COUNT(*) AS n"
        " FROM subscriptions s WHERE s.merchant_id = :m GROUP BY s.status, listed", {"m": merchant_id})
    return {(r["status"], bool(r["listed"])): int(r["n"]) for r in rows}


async def pending_enrolments(gateway: "Gateway", merchant_id: str, limit: int) -> list[Row]:
    """The merchant's customer-page enrolments waiting for their first payment, newest first (the dashboard)."""
    return await gateway.db.fetch_all(
        f"{_SUBSCRIPTION_SELECT} WHERE s.merchant_id = :m AND s.status = :pending"
        " ORDER BY s.created_at DESC, s.id DESC LIMIT :limit", {"m": merchant_id, "pending": PENDING, "limit": limit})


async def paid_active_prices(gateway: "Gateway", merchant_id: str, now: int) -> list[Row]:
    """(amount_usd, interval_sec) of each ACTIVE subscription whose current period is paid, for the MRR."""
    return await gateway.db.fetch_all(
        "SELECT p.amount_usd, p.interval_sec FROM subscriptions s JOIN subscription_plans p ON p.id = s.plan_id"
        " WHERE s.merchant_id = :m AND s.status = :a AND s.current_period_end > :now",
        {"m": merchant_id, "a": ACTIVE, "now": now})


async def pending_from(gateway: "Gateway", plan_id: str, enrol_ip_hash: str) -> tuple[int, int | None]:
    """How many PENDING page enrolments of one visitor a plan holds, and when the first of their
    open invoices expires (None while none is open yet)."""
    row = await gateway.db.fetch_one(
        "SELECT COUNT(*) AS n, MIN(i.expires_at) AS first_expiry FROM subscriptions s"
        " LEFT JOIN subscription_invoices i ON i.id = s.pending_invoice_id"
        " WHERE s.plan_id = :p AND s.enrol_ip_hash = :h AND s.status = :pending",
        {"p": plan_id, "h": enrol_ip_hash, "pending": PENDING})
    assert row is not None, "an aggregate always answers one row"
    return int(row["n"]), None if row["first_expiry"] is None else int(row["first_expiry"])


async def payable_pending(gateway: "Gateway", plan_id: str, enrol_ip_hash: str, *, customer_email: str | None,
                          customer_ref: str | None, now: int) -> Row | None:
    """The first invoice of this visitor's PENDING enrolment with the same fields, while it can still be paid
    (being minted, or open and not expired): what a retried post is sent to."""
    return await gateway.db.fetch_one(
        "SELECT i.* FROM subscriptions s JOIN subscription_invoices i ON i.id = s.pending_invoice_id"
        " WHERE s.plan_id = :p AND s.enrol_ip_hash = :h AND s.status = :pending"
        " AND COALESCE(s.customer_email, '') = :e AND COALESCE(s.customer_ref, '') = :r"
        " AND (i.status = :minting OR (i.status = :open AND i.expires_at > :now))"
        " ORDER BY s.created_at DESC, s.id DESC LIMIT 1",
        {"p": plan_id, "h": enrol_ip_hash, "pending": PENDING, "e": customer_email or "", "r": customer_ref or "",
         "minting": MINTING, "open": OPEN, "now": now})


async def lock_subscription(gateway: "Gateway", subscription_id: str) -> Row | None:
    """The subscription row, locked for the caller's transaction."""
    return await gateway.db.fetch_one(f"SELECT * FROM subscriptions WHERE id = :i{gateway.db.for_update}",
                                      {"i": subscription_id})


async def update_subscription(gateway: "Gateway", subscription_id: str, changes: Mapping[str, Any]) -> None:
    await update_row(gateway, "subscriptions", subscription_id, {**changes, "updated_at": gateway.now()})


async def due_subscriptions(gateway: "Gateway", now: int, limit: int) -> list[str]:
    """ACTIVE subscriptions whose next period has begun and that have no invoice in flight, oldest first."""
    rows = await gateway.db.fetch_all(
        "SELECT id FROM subscriptions WHERE status = :a AND next_billing_at <= :now AND pending_invoice_id IS NULL"
        " ORDER BY next_billing_at, id LIMIT :limit", {"a": ACTIVE, "now": now, "limit": limit})
    return [r["id"] for r in rows]


# -- invoices ------------------------------------------------------------------------------------------


async def insert_invoice(gateway: "Gateway", row: Mapping[str, Any]) -> None:
    await gateway.db.execute(insert_statement("subscription_invoices", row), row)


async def invoice_by_track_id(gateway: "Gateway", track_id: str) -> Row | None:
    return await gateway.db.fetch_one("SELECT * FROM subscription_invoices WHERE track_id = :t", {"t": track_id})


async def lock_invoice(gateway: "Gateway", invoice_id: str) -> Row | None:
    return await gateway.db.fetch_one(f"SELECT * FROM subscription_invoices WHERE id = :i{gateway.db.for_update}",
                                      {"i": invoice_id})


async def invoices_in(gateway: "Gateway", status: str, limit: int) -> list[Row]:
    return await gateway.db.fetch_all(
        "SELECT * FROM subscription_invoices WHERE status = :s ORDER BY created_at, id LIMIT :limit",
        {"s": status, "limit": limit})


async def expired_open_invoices(gateway: "Gateway", now: int, limit: int) -> list[Row]:
    """Open invoices past their payment's expiry: the tick asks the core how each one ended."""
    return await gateway.db.fetch_all(
        "SELECT * FROM subscription_invoices WHERE status = :s AND expires_at <= :now ORDER BY expires_at, id"
        " LIMIT :limit", {"s": OPEN, "now": now, "limit": limit})


async def open_invoice(gateway: "Gateway", invoice_id: str, *, pay_url: str, expires_at: int | None) -> bool:
    """minting -> open, once: True for the one caller that made the change."""
    won = await gateway.db.fetch_val(
        "UPDATE subscription_invoices SET status = :open, pay_url = :u, expires_at = :e"
        " WHERE id = :i AND status = :minting RETURNING id",
        {"open": OPEN, "u": pay_url, "e": expires_at, "i": invoice_id, "minting": MINTING})
    return won is not None


async def resolve_invoice(gateway: "Gateway", invoice_id: str, changes: Mapping[str, Any]) -> None:
    await update_row(gateway, "subscription_invoices", invoice_id, changes)


async def forget_invoices(gateway: "Gateway", track_ids: Sequence[str]) -> None:
    """Drop the invoice rows of these (pruned) payments, then every EXPIRED subscription left with none."""
    await delete_rows_naming(gateway, "subscription_invoices", "track_id", track_ids)
    await gateway.db.execute(
        "DELETE FROM subscriptions WHERE status = :expired AND NOT EXISTS"
        " (SELECT 1 FROM subscription_invoices i WHERE i.subscription_id = subscriptions.id)",
        {"expired": EXPIRED})


async def history(gateway: "Gateway", subscription_id: str, limit: int = 50) -> list[Row]:
    """The subscription's invoices, newest first (the customer page's history)."""
    return await gateway.db.fetch_all(
        "SELECT * FROM subscription_invoices WHERE subscription_id = :s ORDER BY created_at DESC, id DESC"
        " LIMIT :limit", {"s": subscription_id, "limit": limit})
