"""A payment's story for its detail page: what happened, when, in the merchant's words (issue 49 item 7).

The facts come from ``payment_history`` (the core's read of the rows every
step already leaves); this module only orders them and words them, as
Stripe's payment page lists its events. Each webhook is one entry with its
attempts (time, HTTP answer or error) under it, so "was my server told, and
what did it answer" is read beside the payment rather than in the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Mapping, Sequence

from .explorers import explorer_link
from .views import status_words

# Why an event was not sent, or where it stands, in words (the outbox's statuses, core/events/outbox.py).
WEBHOOK_STATES = {
    "delivered": "Delivered",
    "pending": "Being sent (retried on failure)",
    "failed": "Gave up after every retry",
    "skipped_no_secret": "Not sent: no webhook secret is set",
    "no_url": "Not sent: no webhook URL is set",
}


@dataclass(frozen=True)
class Entry:
    """One line of the timeline; ``webhook`` is set on a webhook's entry (its attempts and whether it may be
    sent again)."""

    at: int
    title: str
    detail: str = ""
    kind: str = "payment"
    webhook: Mapping[str, Any] | None = None
    attempts: Sequence[Mapping[str, Any]] = field(default_factory=tuple)


def iso_time(timestamp: int) -> str:
    """A Unix time as a ``<time datetime>`` value (the text beside it is ``when``'s)."""
    return datetime.fromtimestamp(int(timestamp), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def attempt_result(attempt: Mapping[str, Any]) -> str:
    """``200 OK``-like text for one delivery attempt: its HTTP status, else the error it met."""
    if attempt["status_code"]:
        outcome = "accepted" if attempt["success"] else "refused"
        return f"HTTP {attempt['status_code']} ({outcome})"
    return attempt["error"] or ("Accepted" if attempt["success"] else "No answer")


def timeline(payment: Mapping[str, Any], history: Mapping[str, Any]) -> list[Entry]:
    """Every recorded step of ``payment`` (the API's view) oldest first; ties keep the order a payment lives
    them (created, seen, credited, paid, webhook)."""
    entries = [Entry(payment["created_at"], "Payment created",
                     f"{payment['amount'] or 'Any amount'} {payment['currency']}".strip())]
    for deposit in history["deposits"]:
        amount = f"{deposit['amount']} {deposit['coin']}"
        entries.append(Entry(deposit["seen_at"], "Deposit seen", amount, kind="deposit"))
        if deposit["credited_at"] and deposit["fee"] is not None:
            entries.append(Entry(int(deposit["credited_at"]), "Deposit credited",
                                 f"{amount} after {deposit['confirmations']} confirmations; fee {deposit['fee']},"
                                 f" net {deposit['net']} {deposit['coin']}", kind="deposit"))
    if payment.get("paid_at"):
        entries.append(Entry(int(payment["paid_at"]), "Paid", kind="paid"))
    if history.get("closed_at"):
        entries.append(Entry(history["closed_at"], status_words(payment["status"]), kind="closed"))
    for refund in history["refunds"]:
        amount = f"{refund['amount']} {refund['coin']}"
        entries.append(Entry(refund["created_at"], "Refund requested", amount, kind="refund"))
        if refund["finished_at"]:
            entries.append(Entry(int(refund["finished_at"]), f"Refund {status_words(refund['status']).lower()}",
                                 amount, kind="refund"))
    for event in history["webhooks"]:
        entries.append(Entry(event["created_at"], f"Webhook {event['event_type']}",
                             WEBHOOK_STATES.get(event["status"], status_words(event["status"])), kind="webhook",
                             webhook=event, attempts=rounds(event["attempts"])))
    order = {"payment": 0, "deposit": 1, "paid": 2, "closed": 2, "refund": 3, "webhook": 4}
    return sorted(entries, key=lambda e: (e.at, order[e.kind]))


def rounds(attempts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The attempts, each marked ``again`` when it opens a new round: attempt 1 after earlier ones is the event
    sent again (by "Send again" or the operator's ``orbchain webhooks redeliver``), as the log records it."""
    return [{**a, "again": a["attempt"] == 1 and i > 0} for i, a in enumerate(attempts)]


def linked_deposits(deposits: Sequence[Mapping[str, Any]], urls: Mapping[str, str]) -> list[dict[str, Any]]:
    """The API's transactions, each with its explorer page (``explorer``, None when not configured)."""
    return [{**d, "explorer": explorer_link(urls, coin=d.get("coin"), chain=d.get("chain"), txid=d.get("tx_hash"))}
            for d in deposits]
