"""What happened to one payment, read from what the database already records (issue 49 item 7).

Why a read model and no new table: every step a merchant asks about already
leaves a row with its time. The payment row has its creation, its paid time
and (for a closed one) the time it closed; each deposit row when it was seen
and when it was credited, and the fee the ledger took from it; each refund
is a payout row naming the payment; each webhook is an outbox row whose id is
derived from its logical key (``core/events/outbox.py`` ``event_id_for``),
with one delivery-log row per attempt. So the history is recomputed from
those rows, exact for past payments too, and cannot drift from them.

The logical keys are those the producers use (``core/payments/status.py``,
``core/watching/deposits.py``, ``core/payouts/service.py``); the counters on
the rows (``paid_count``, ``reverted_count``, ``credit_count``) bound their
generations, so every key is looked up by primary key and none is guessed.
Amounts are summed as integers in base units and formatted once.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..events.outbox import event_id_for
from ..events.webhooks import REDELIVERABLE
from ..infra.db_dialect import in_list
from ..types.deposit_status import CREDITED
from ..types.statuses import CANCELLED, EXPIRED
from .service import get_payment, payment_deposits
from ..contract.gateway import PluginGateway as Gateway

DEPOSIT_EVENTS = ("deposit.credited", "deposit.reversed")
REFUND_EVENTS = ("payout.confirmed", "payout.failed")
# A payout's failed status (core/payouts/service.py FAILED): payments stand beside payouts and cannot import it.
PAYOUT_FAILED = "Failed"


def payment_event_keys(payment: Mapping[str, Any], deposits: Sequence[Mapping[str, Any]],
                       refunds: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every logical key a webhook about this payment, its deposits or its refunds may have been sent under."""
    track_id = payment["track_id"]
    keys = [f"payment.paying:{track_id}", f"payment.expired:{track_id}"]
    keys += [f"payment.paid:{track_id}:{g}" for g in range(1, int(payment["paid_count"] or 0) + 1)]
    keys += [f"payment.reverted:{track_id}:{g}" for g in range(1, int(payment["reverted_count"] or 0) + 1)]
    for deposit in deposits:
        keys += [f"{kind}:{deposit['id']}:{g}" for kind in DEPOSIT_EVENTS
                 for g in range(1, int(deposit["credit_count"] or 0) + 1)]
    keys += [f"{kind}:{refund['track_id']}" for kind in REFUND_EVENTS for refund in refunds]
    return keys


async def payment_webhooks(gateway: "Gateway", merchant_id: str, keys: Sequence[str]) -> list[dict[str, Any]]:
    """The webhook events sent under ``keys`` (this merchant's only), oldest first, each with its attempts."""
    if not keys:
        return []
    placeholders, ids = in_list("e", sorted({event_id_for(key) for key in keys}))
    events = await gateway.db.fetch_all(
        "SELECT event_id, event_type, status, attempts, next_attempt_at, created_at, delivered_at"
        f" FROM webhook_events WHERE merchant_id = :m AND event_id IN ({placeholders})",
        {"m": merchant_id, **ids})
    if not events:
        return []
    placeholders, ids = in_list("e", [row["event_id"] for row in events])
    attempts = await gateway.db.fetch_all(
        "SELECT id, event_id, attempt, url, status_code, success, error, response_preview, created_at"
        f" FROM webhook_deliveries WHERE merchant_id = :m AND event_id IN ({placeholders}) ORDER BY id",
        {"m": merchant_id, **ids})
    by_event: dict[str, list[dict[str, Any]]] = {}
    first_line: dict[str, int] = {}  # an event's first delivery-log line: the order events of one second were made
    for row in attempts:
        first_line.setdefault(row["event_id"], int(row["id"]))
        by_event.setdefault(row["event_id"], []).append({
            "attempt": int(row["attempt"]), "url": row["url"], "status_code": row["status_code"],
            "success": bool(row["success"]), "error": row["error"], "response_preview": row["response_preview"],
            "created_at": int(row["created_at"]),
        })
    # Times are whole seconds: events of one second keep the order of their first attempt (never tried: last).
    events = sorted(events, key=lambda row: (int(row["created_at"]), first_line.get(row["event_id"], 2**63),
                                             row["event_id"]))
    return [{
        "event_id": row["event_id"], "event_type": row["event_type"], "status": row["status"],
        "created_at": int(row["created_at"]), "delivered_at": row["delivered_at"],
        "next_attempt_at": row["next_attempt_at"], "redeliverable": row["status"] in REDELIVERABLE,
        "attempts": by_event.get(row["event_id"], []),
    } for row in events]


async def payment_history(gateway: "Gateway", merchant_id: str, track_id: str) -> dict[str, Any]:
    """One payment's money and events: its deposits with the fee taken from each, what was received, the fee
    and the net in the coin paid, its refunds, the time it closed, and every webhook about it with its
    attempts. Another merchant's (or an unknown) payment is 404, as ``get_payment``."""
    payment = await get_payment(gateway, merchant_id, track_id)
    deposits = await payment_deposits(gateway, track_id)
    refunds = await gateway.db.fetch_all(
        "SELECT track_id, coin, amount, status, tx_hash, created_at, finished_at FROM payouts"
        " WHERE refund_of_payment_id = :t AND merchant_id = :m ORDER BY created_at, id",
        {"t": track_id, "m": merchant_id})
    coin = gateway.coins.require(payment["pay_currency"])
    to_int = gateway.db.to_int
    received = fee = 0
    rows = []
    for deposit in deposits:
        deposit_coin = gateway.coins.require(deposit["coin"])
        amount = to_int(deposit["amount"])
        credited = deposit["status"] == CREDITED
        taken = to_int(deposit["fee"]) if credited and deposit["fee"] is not None else None
        if credited and deposit["coin"] == coin.symbol:
            received += amount
            fee += taken or 0
        rows.append({
            "tx_hash": deposit["tx_hash"], "coin": deposit["coin"], "chain": deposit["chain"],
            "amount": deposit_coin.format(amount), "status": deposit["status"],
            "confirmations": int(deposit["confirmations"]), "threshold": int(deposit["threshold"]),
            "fee": None if taken is None else deposit_coin.format(taken),
            "net": None if taken is None else deposit_coin.format(amount - taken),
            "seen_at": int(deposit["created_at"]), "credited_at": deposit["credited_at"],
        })
    refunded = sum(to_int(r["amount"]) for r in refunds if r["status"] != PAYOUT_FAILED and r["coin"] == coin.symbol)
    return {
        "coin": coin.symbol,
        "received": coin.format(received), "fee": coin.format(fee), "net": coin.format(received - fee),
        "refunded": coin.format(refunded),
        "deposits": rows,
        "refunds": [{
            "track_id": r["track_id"], "coin": r["coin"], "status": r["status"], "tx_hash": r["tx_hash"],
            "amount": gateway.coins.require(r["coin"]).format(to_int(r["amount"])),
            "created_at": int(r["created_at"]), "finished_at": r["finished_at"],
        } for r in refunds],
        # A closed payment's row was last written when it closed (payments are never edited after).
        "closed_at": int(payment["updated_at"]) if payment["status"] in (EXPIRED, CANCELLED) else None,
        "webhooks": await payment_webhooks(gateway, merchant_id,
                                           payment_event_keys(payment, deposits, refunds)),
    }
