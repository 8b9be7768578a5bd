"""The plugin's webhooks (SPEC 6.3-6.4): subscription.invoiced, subscription.paid, subscription.failed.

Each is enqueued in the core's outbox inside the transaction that makes the
change it announces, with a logical key naming the invoice, so a replayed
tick or hook can never send one twice (the same key is the same event_id).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ...api import enqueue_event

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

INVOICED, PAID, FAILED = "subscription.invoiced", "subscription.paid", "subscription.failed"
EVENT_KINDS = {
    INVOICED: "The billing tick opened an invoice of a subscription (with its pay_url).",
    PAID: "An invoice of a subscription was paid.",
    FAILED: "A subscription failed after two consecutive expired invoices.",
}
FAILED_REASON = "two_consecutive_invoices_expired"


async def invoiced(gateway: "Gateway", sub: Mapping[str, Any], invoice: Mapping[str, Any], pay_url: str) -> None:
    await enqueue_event(gateway, merchant_id=sub["merchant_id"], event_type=INVOICED, body={
        "type": "subscription", "subscription_id": sub["id"], "plan_id": sub["plan_id"],
        "customer_email": sub["customer_email"], "payment_track_id": invoice["track_id"],
        "amount_usd": invoice["amount_usd"], "grace_count": int(invoice["attempt"]), "pay_url": pay_url,
        "period_start": int(invoice["period_start"]), "period_end": int(invoice["period_end"]),
    }, logical_key=f"{INVOICED}:{invoice['id']}")


async def paid(gateway: "Gateway", sub: Mapping[str, Any], plan: Mapping[str, Any], invoice: Mapping[str, Any],
               *, paid_coin: str, paid_amount: str) -> None:
    await enqueue_event(gateway, merchant_id=sub["merchant_id"], event_type=PAID, body={
        "type": "subscription", "subscription_id": sub["id"], "plan_id": sub["plan_id"],
        "plan_label": plan["label"], "amount_usd": invoice["amount_usd"],
        "interval_sec": int(invoice["period_end"]) - int(invoice["period_start"]),
        "customer_ref": sub["customer_ref"], "customer_email": sub["customer_email"],
        "invoice_track_id": invoice["track_id"], "paid_amount": paid_amount, "paid_coin": paid_coin,
        "current_period_start": int(invoice["period_start"]), "current_period_end": int(invoice["period_end"]),
    }, logical_key=f"{PAID}:{invoice['id']}")


async def failed(gateway: "Gateway", sub: Mapping[str, Any], invoice: Mapping[str, Any]) -> None:
    await enqueue_event(gateway, merchant_id=sub["merchant_id"], event_type=FAILED, body={
        "type": "subscription", "subscription_id": sub["id"], "plan_id": sub["plan_id"], "reason": FAILED_REASON,
        "last_invoice_id": invoice["track_id"],
    }, logical_key=f"{FAILED}:{sub['id']}:{invoice['id']}")
