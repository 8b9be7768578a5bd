"""The billing tick (SPEC 3.4, 8): one invoice per due period, never two, and what their outcomes do.

Minting a period's invoice is three steps, each safe to repeat:

1. **claim** (one transaction, the subscription row locked): the period is
   written as a ``minting`` invoice row with a ``track_id`` chosen now, and
   the subscription points at it (``pending_invoice_id``). A unique
   (subscription, period_start, attempt) makes a second claim impossible,
   whatever the number of processes.
2. **create** the core payment with that ``track_id``
   (``create_invoice``); called again with the same id it returns
   the payment already made instead of a second one.
3. **open** (one transaction): ``minting`` -> ``open`` once, together with
   the ``subscription.invoiced`` webhook.

A crash after step 1 or 2 leaves a ``minting`` row, which the next tick
carries through steps 2 and 3: the payment is created once and announced once.

Outcomes come from the core's ``payment_paid``/``payment_expired``/
``payment_cancelled`` hooks and, as a fallback for a hook lost in a crash,
from the tick itself, which looks at every open invoice past its expiry.
Paid: the subscription's period becomes the invoice's period and the next
one starts where it ends (not at payment time). Expired (or cancelled by the
merchant): an ACTIVE subscription's grace count rises, and the same period
is invoiced again; at two in a row it is FAILED.

A customer-page enrolment (``checkout.py``) is claimed and minted the same
way, at enrolment, while PENDING: its invoice is not announced (no
``subscription.invoiced``: an anonymous sign-up costs the merchant no
webhook), paying it makes the subscription ACTIVE, and its expiry makes it
EXPIRED, silently and for good (the tick bills only ACTIVE subscriptions).
No subscription webhook ever names an enrolment that is not a subscription
(``store.is_subscription``): paying the invoice of one the customer
cancelled first credits the merchant (the core's ``payment.paid``) and
sends no ``subscription.paid``.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Mapping

from ...api import ApiError, create_invoice, database_away, find_payment, is_unique_violation, new_track_id
from . import store, webhooks
from .enrolment import manage_url
from .settings import DEFAULT_LIFETIME_MINUTES, read_settings
from .store import ACTIVE, EXPIRED, FAILED, INV_EXPIRED, INV_PAID, MINTING, OPEN, PAUSED, PENDING

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway
    from ...api import PaymentRecord

log = logging.getLogger(__name__)

JOB_NAME = "subscriptions.billing"
TICK_SECONDS = 300  # SPEC 8: the billing tick runs every 5 minutes
FAIL_AFTER = 2  # SPEC 8: two consecutive expired invoices
BATCH = 500  # rows of each kind handled per tick; the rest wait for the next one
DAY = 86400
__all__ = ["DEFAULT_LIFETIME_MINUTES", "JOB_NAME", "TICK_SECONDS", "run_billing"]


@dataclass
class TickReport:
    """What one tick did (for tests and logs)."""

    minted: int = 0
    paid: int = 0
    expired: int = 0
    failed: int = 0


def invoice_lifetime(gateway: "Gateway") -> int:
    return read_settings(gateway).invoice_lifetime_minutes


async def run_billing(gateway: "Gateway") -> TickReport:
    """One tick: settle finished invoices, finish interrupted mints, then invoice every due period."""
    report = TickReport()
    now = gateway.now()
    for invoice in await store.expired_open_invoices(gateway, now, BATCH):
        record = await find_payment(gateway, invoice["track_id"])
        if record is not None:
            _count(report, await settle(gateway, record))
    for unfinished in await store.invoices_in(gateway, MINTING, BATCH):
        report.minted += await mint_guarded(gateway, unfinished)
    for subscription_id in await store.due_subscriptions(gateway, now, BATCH):
        claimed = await claim(gateway, subscription_id, now)
        if claimed is not None:
            report.minted += await mint_guarded(gateway, claimed)
    return report


def _count(report: TickReport, outcome: str | None) -> None:
    if outcome == INV_PAID:
        report.paid += 1
    elif outcome == INV_EXPIRED:
        report.expired += 1
    elif outcome == FAILED:
        report.expired += 1
        report.failed += 1


async def billing_job(gateway: "Gateway") -> None:
    report = await run_billing(gateway)
    if report.minted or report.paid or report.expired:
        log.info("subscription billing: %s", report)


# -- minting -------------------------------------------------------------------------------------------


async def claim(gateway: "Gateway", subscription_id: str, now: int) -> Mapping[str, Any] | None:
    """Step 1: record the due period as a ``minting`` invoice; None when it is not (or no longer) due."""
    try:
        async with gateway.db.transaction():
            sub = await store.lock_subscription(gateway, subscription_id)
            if sub is None or sub["status"] != ACTIVE or int(sub["next_billing_at"]) > now \
                    or sub["pending_invoice_id"] is not None:
                return None  # another tick (or a pause, a cancel) got there first
            plan = await store.plan_of(gateway, sub["merchant_id"], sub["plan_id"])
            return await claim_period(gateway, sub, plan, now)
    except Exception as exc:
        if is_unique_violation(exc):
            log.warning("subscription %s: period already claimed", subscription_id)
            return None
        raise


async def claim_period(gateway: "Gateway", sub: Mapping[str, Any], plan: Mapping[str, Any],
                       now: int) -> Mapping[str, Any]:
    """Step 1 inside the caller's transaction (the subscription row locked or just inserted):
    the period starting at ``next_billing_at`` as a ``minting`` invoice the subscription points at."""
    start = int(sub["next_billing_at"])
    invoice = {
        "id": "sinv_" + secrets.token_hex(10), "subscription_id": sub["id"],
        "merchant_id": sub["merchant_id"], "period_start": start,
        "period_end": start + int(plan["interval_sec"]), "attempt": int(sub["grace_count"]),
        "track_id": new_track_id(), "amount_usd": plan["amount_usd"], "status": MINTING,
        "pay_url": None, "expires_at": None, "paid_coin": None, "paid_amount": None, "created_at": now,
        "resolved_at": None,
    }
    await store.insert_invoice(gateway, invoice)
    await store.update_subscription(gateway, sub["id"], {"pending_invoice_id": invoice["id"]})
    return invoice


async def mint_guarded(gateway: "Gateway", invoice: Mapping[str, Any]) -> int:
    """Steps 2 and 3 for one invoice; a failure is written to the subscription (the tick tries again) and
    never stops the tick or an enrolment."""
    try:
        return 1 if await mint(gateway, invoice) else 0
    except ApiError as exc:
        reason = exc.code or exc.message
    except Exception:  # a bug must not stop the other merchants' billing
        log.exception("minting subscription invoice %s failed", invoice["id"])
        reason = "internal error"
    await store.update_subscription(gateway, invoice["subscription_id"], {"last_error": reason})
    return 0


async def mint(gateway: "Gateway", invoice: Mapping[str, Any]) -> bool:
    """Steps 2 and 3: create the payment (once per track id) and open the invoice (once).

    Every invoice's page sends the payer back to the manage page once Paid. A PENDING
    enrolment's invoice is minted for an anonymous visitor: unpaid, the core prunes it after
    ``unpaid_retention_days``, and it is never announced by ``subscription.invoiced``.
    """
    sub = await store.subscription_row(gateway, invoice["subscription_id"])
    plan = await store.plan_of(gateway, invoice["merchant_id"], sub["plan_id"])
    pending = sub["status"] == PENDING
    record = await create_invoice(
        gateway, invoice["merchant_id"], track_id=invoice["track_id"], amount=Decimal(invoice["amount_usd"]),
        currency="USD", coins=store.coins_of(plan), order_id=f"subscription:{sub['id']}",
        description=f"{plan['label']} (subscription)", email=sub["customer_email"],
        lifetime_minutes=invoice_lifetime(gateway), return_url=manage_url(gateway, sub["magic_token"]),
        unpaid_retention_seconds=read_settings(gateway).unpaid_retention_days * DAY if pending else None,
        brand_id=plan["brand_id"])
    async with gateway.db.transaction():
        locked = await store.lock_subscription(gateway, sub["id"])
        assert locked is not None, "a subscription with an invoice in flight is never pruned"
        if not await store.open_invoice(gateway, invoice["id"], pay_url=record.payment_url,
                                        expires_at=record.expires_at):
            return False  # another tick opened it
        await store.update_subscription(gateway, sub["id"], {"last_error": None})
        if store.is_subscription(locked):  # an unpaid page enrolment's first invoice is announced by nothing
            await webhooks.invoiced(gateway, locked, invoice, record.payment_url)
    return True


# -- outcomes ------------------------------------------------------------------------------------------


async def payment_changed(gateway: "Gateway", track_id: str) -> None:
    """The hooks' entry: settle the invoice of ``track_id`` if it is one of ours. Never raises."""
    try:
        if await store.invoice_by_track_id(gateway, track_id) is None:
            return  # not a subscription invoice: one indexed look-up
        record = await find_payment(gateway, track_id)
        if record is not None:
            await settle(gateway, record)
    except Exception as exc:  # hooks must not raise; the tick settles it later
        if not database_away(gateway, exc, "a subscription invoice's settlement"):  # an outage: logged once
            log.exception("settling subscription invoice %s failed", track_id)


async def settle(gateway: "Gateway", record: "PaymentRecord") -> str | None:
    """Apply a finished payment to its open invoice and subscription, once; the outcome, or None."""
    if record.is_open:
        return None
    found = await store.invoice_by_track_id(gateway, record.track_id)
    if found is None or found["status"] != OPEN:
        return None
    paid = record.status == "Paid"
    now = gateway.now()
    async with gateway.db.transaction():
        sub = await store.lock_subscription(gateway, found["subscription_id"])
        invoice = await store.lock_invoice(gateway, found["id"])
        assert sub is not None and invoice is not None, "subscriptions and their invoices are never deleted"
        if invoice["status"] != OPEN:
            return None  # settled by the hook or by another tick
        pending = sub["pending_invoice_id"] == invoice["id"]
        changes: dict[str, Any] = {"pending_invoice_id": None} if pending else {}
        if paid:
            outcome = INV_PAID
            coin = gateway.coins.get(record.pay_currency)
            amount = record.pay_amount or 0
            paid_amount = coin.format(amount) if coin is not None else str(amount)
            await store.resolve_invoice(gateway, invoice["id"], {
                "status": INV_PAID, "resolved_at": now, "paid_coin": record.pay_currency, "paid_amount": paid_amount})
            if sub["status"] in (ACTIVE, PAUSED, PENDING) \
                    and int(invoice["period_end"]) > int(sub["current_period_end"] or 0):
                changes.update({"current_period_start": int(invoice["period_start"]),
                                "current_period_end": int(invoice["period_end"]),
                                "next_billing_at": int(invoice["period_end"]), "grace_count": 0})
                if sub["status"] == PENDING:
                    changes["status"] = ACTIVE  # the first period is paid: the enrolment is real
            if store.is_subscription({**sub, **changes}):  # not for an enrolment cancelled before paying
                plan = await store.plan_of(gateway, sub["merchant_id"], sub["plan_id"])
                await webhooks.paid(gateway, sub, plan, invoice, paid_coin=record.pay_currency,
                                    paid_amount=paid_amount)
        else:
            outcome = INV_EXPIRED
            await store.resolve_invoice(gateway, invoice["id"], {"status": INV_EXPIRED, "resolved_at": now})
            if sub["status"] == PENDING and pending:
                changes.update({"status": EXPIRED, "ended_at": now})  # never paid: never billed again
            elif sub["status"] == ACTIVE and pending:
                grace = int(sub["grace_count"]) + 1
                changes["grace_count"] = grace
                if grace >= FAIL_AFTER:
                    outcome = FAILED
                    changes.update({"status": FAILED, "ended_at": now})
                    await webhooks.failed(gateway, sub, invoice)
        if changes:
            await store.update_subscription(gateway, sub["id"], changes)
    return outcome


# -- pruning -------------------------------------------------------------------------------------------


async def forget_pruned(gateway: "Gateway", track_ids: list[str]) -> None:
    """The ``payments_pruning`` hook: the core deletes these unpaid payments, so drop our invoice rows
    naming them and every EXPIRED enrolment left with no invoice (a lapsed page sign-up). Idempotent."""
    if track_ids:
        await store.forget_invoices(gateway, track_ids)
