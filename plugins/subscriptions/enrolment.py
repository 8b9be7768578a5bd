"""Subscriptions (SPEC 2.13, 3.4, 4.5, 4.10): enrolment, the state moves people make, and views.

The billing tick (``billing.py``) mints the invoices and ``checkout.py``
stores new subscriptions (opening their first invoice at once); here are
their rows and tokens, and the moves the customer or merchant makes: pause,
resume and cancel. Every move locks the row, so a move racing
the tick or another move sees the state the other one left.

The magic token of the customer's management page is 256 random bits. It
is found by its SHA-256 (an indexed, fixed-length look-up that reveals
nothing about the token's prefix) and then compared in constant time; a
cancel replaces it, so an old link stops working.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Mapping

from ...api import Field, InvalidRequest, NotFound, ValidationError, found
from . import store
from .store import ACTIVE, CANCELLED, ENDED, EXPIRED, FAILED, PAUSED, PENDING

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

MONTH_SECONDS = 30 * 86400  # the MRR's month (docs/decisions.md)
START_AT_PAST = 86400  # start_at up to a day ago is read as now (docs/subscriptions.md)
START_AT_AHEAD = 366 * 86400  # and at most a year and a day ahead: the longest plan interval, plus a day
PLAN_MISSING = "plan_not_found_or_disabled"

CREATE_FIELDS = [
    Field("plan_id", required=True, max_len=64),
    Field("customer_ref", max_len=128),
    Field("customer_email", "email", max_len=254),
    Field("start_at", max_len=64),
    Field("idempotency_key", max_len=128),
]


def new_token() -> tuple[str, str]:
    """A fresh magic token and the digest it is found by."""
    token = secrets.token_urlsafe(32)
    return token, token_digest(token)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def manage_path(token: str) -> str:
    return f"/subscribe/manage/{token}"


def manage_url(gateway: "Gateway", token: str) -> str:
    """The customer's manage page, absolute (``manage_url`` of SPEC 2.13, an invoice's ``return_url``)."""
    return f"{gateway.config.base_url}{manage_path(token)}"


def parse_start_at(text: str | None, now: int) -> int:
    """RFC 3339 with a time zone, inside the window ``now - START_AT_PAST`` .. ``now + START_AT_AHEAD``.

    A start a little in the past (a retried request, a skewed clock) means now: nothing is billed
    backwards. Anything outside the window (year 0001, year 9999) is a typo or a probe, refused.
    """
    if text is None:
        return now
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        when = int(moment.timestamp())
    except (ValueError, OverflowError):  # OverflowError: an offset pushing year 1 or 9999 out of range
        raise ValidationError({"start_at": "must be an RFC 3339 date-time"}) from None
    if moment.tzinfo is None or "T" not in text.upper():
        raise ValidationError({"start_at": "must be an RFC 3339 date-time with a time zone"})
    if when < now - START_AT_PAST:
        raise ValidationError({"start_at": "must not be more than 24 hours in the past"})
    if when > now + START_AT_AHEAD:
        raise ValidationError({"start_at": f"must be at most {START_AT_AHEAD // 86400} days ahead"})
    return max(now, when)


def new_row(gateway: "Gateway", plan: Mapping[str, Any], *, status: str, customer_ref: str | None,
            customer_email: str | None, start: int, enrol_ip_hash: str | None = None,
            idempotency_key: str | None = None) -> dict[str, Any]:
    """A new subscription's row (not yet stored), with a fresh magic token."""
    now = gateway.now()
    token, digest = new_token()
    return {
        "id": "sub_" + secrets.token_hex(10), "merchant_id": plan["merchant_id"], "plan_id": plan["id"],
        "status": status, "customer_ref": customer_ref, "customer_email": customer_email, "next_billing_at": start,
        "current_period_start": None, "current_period_end": None, "grace_count": 0, "pending_invoice_id": None,
        "magic_token": token, "token_hash": digest, "last_error": None, "created_at": now, "updated_at": now,
        "ended_at": None, "enrol_ip_hash": enrol_ip_hash, "idempotency_key": idempotency_key,
    }


async def by_token(gateway: "Gateway", token: str) -> Mapping[str, Any]:
    """The subscription a magic token opens; 404 for any other string (a rotated one included)."""
    if not 16 <= len(token) <= 128:
        raise NotFound("not found")
    row = await store.subscription_by_token_hash(gateway, token_digest(token))
    if row is None or not hmac.compare_digest(row["magic_token"].encode(), token.encode()):
        raise NotFound("not found")
    return row


# The codes of a move the subscription's state refuses (the manage page shows the state instead).
STATE_CODES = ("subscription_state", "subscription_failed")


# -- moves ---------------------------------------------------------------------------------------------


async def pause(gateway: "Gateway", subscription_id: str) -> None:
    """ACTIVE -> PAUSED (SPEC 3.4); pausing a paused one changes nothing."""
    async with gateway.db.transaction():
        row = await _locked(gateway, subscription_id)
        if row["status"] == PAUSED:
            return
        _require(row, ACTIVE, "only an active subscription can be paused")
        await store.update_subscription(gateway, subscription_id, {"status": PAUSED})


async def resume(gateway: "Gateway", subscription_id: str) -> None:
    """PAUSED -> ACTIVE with the next billing time reset to now (SPEC 3.4) and no expired invoice held against it."""
    async with gateway.db.transaction():
        row = await _locked(gateway, subscription_id)
        if row["status"] == ACTIVE:
            return
        _require(row, PAUSED, "only a paused subscription can be resumed")
        await store.update_subscription(gateway, subscription_id,
                                        {"status": ACTIVE, "next_billing_at": gateway.now(), "grace_count": 0})


async def cancel(gateway: "Gateway", subscription_id: str) -> None:
    """ACTIVE, PAUSED or PENDING -> CANCELLED, final, with a new magic token; cancelling again changes nothing."""
    async with gateway.db.transaction():
        row = await _locked(gateway, subscription_id)
        if row["status"] == CANCELLED:
            return
        if row["status"] == FAILED:
            raise InvalidRequest("a failed subscription cannot be cancelled", code="subscription_failed")
        if row["status"] == EXPIRED:
            raise InvalidRequest("an expired enrolment cannot be cancelled (it was never paid)",
                                 code="subscription_state")
        token, digest = new_token()
        await store.update_subscription(gateway, subscription_id, {
            "status": CANCELLED, "magic_token": token, "token_hash": digest, "ended_at": gateway.now()})


async def _locked(gateway: "Gateway", subscription_id: str) -> Mapping[str, Any]:
    return found(await store.lock_subscription(gateway, subscription_id))


def _require(row: Mapping[str, Any], status: str, message: str) -> None:
    if row["status"] != status:
        raise InvalidRequest(f"{message} (this one is {row['status']})", code="subscription_state")


# -- views ---------------------------------------------------------------------------------------------


def subscription_view(gateway: "Gateway", row: Mapping[str, Any]) -> dict[str, Any]:
    """SPEC 2.13 plus customer_email, the current period, the open invoice's pay_url and created_at.

    ``next_billing_at`` is null once nothing will be billed again (CANCELLED, FAILED, EXPIRED).
    """
    ended = row["status"] in ENDED
    return {
        "subscription_id": row["id"], "status": row["status"], "plan_id": row["plan_id"],
        "plan_label": row["plan_label"], "amount_usd": row["plan_amount_usd"],
        "interval_sec": int(row["plan_interval_sec"]), "customer_ref": row["customer_ref"],
        "customer_email": row["customer_email"],
        "next_billing_at": None if ended else int(row["next_billing_at"]),
        "current_period_start": row["current_period_start"], "current_period_end": row["current_period_end"],
        "pay_url": row["open_pay_url"], "last_error": row["last_error"], "created_at": int(row["created_at"]),
        "manage_url": manage_url(gateway, row["magic_token"]),
    }


async def summary(gateway: "Gateway", merchant_id: str) -> dict[str, Any]:
    """Counts of subscriptions per status, of unpaid page enrolments (``pending``: waiting for their first
    payment, ``expired``: lapsed), and the approximate MRR from paid periods only.

    The MRR is each ACTIVE subscription's price per 30 days, counted only
    while the period it is in has been paid (``current_period_end`` still
    ahead): an enrolment that never paid, or a period whose invoice is still
    open, is not revenue (issue 32). Summed exactly as fractions and rounded
    to cents once, half to even, so the figure is the same decimal on every
    run and database.
    """
    counts = await store.status_counts(gateway, merchant_id)
    subscriptions = {status: counts.get((status, True), 0) for status in store.SPEC_STATUSES}
    total = sum((Fraction(Decimal(r["amount_usd"])) * MONTH_SECONDS / int(r["interval_sec"])
                 for r in await store.paid_active_prices(gateway, merchant_id, gateway.now())), Fraction(0))
    mrr = (Decimal(total.numerator) / Decimal(total.denominator)).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)
    return {"active": subscriptions[ACTIVE], "paused": subscriptions[PAUSED], "failed": subscriptions[FAILED],
            "cancelled": subscriptions[CANCELLED], "pending": counts.get((PENDING, False), 0),
            "expired": counts.get((EXPIRED, False), 0), "mrr_usd": format(mrr, "f")}
