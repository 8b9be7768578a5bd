"""The customer page's enrolment (SPEC 4.14, issue 29): PENDING until the first invoice is paid.

``POST /subscribe/<plan>`` is anonymous, so an enrolment must cost the
merchant nothing until someone pays. It is stored PENDING with the first
period's invoice claimed in the same transaction, then that invoice is
minted at once (``billing.mint``) and the customer goes straight to its
hosted page, whose "Return to merchant" link (once Paid) is the manage page.
Paying it makes the subscription ACTIVE (``billing.settle``); letting it
expire makes it EXPIRED, for good: the billing tick bills only ACTIVE
subscriptions, no webhook is sent for it, and the core prunes the unpaid
invoice (and the plugin the enrolment) after ``unpaid_retention_days``.

One visitor holds at most ``pending_per_ip`` unpaid enrolments per plan: the
plan row is locked while they are counted and the new one is stored, so
parallel posts cannot pass the cap together. Only a digest of (plan, IP) is
stored, never the address.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from ...api import ApiError, InvalidRequest, RateLimited
from . import billing, enrolment, store
from .settings import read_settings
from .store import EXPIRED, INV_EXPIRED, PENDING

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

PENDING_CAP_CODE = "too_many_pending_enrolments"


class PendingCapReached(RateLimited):
    """429: this visitor already holds ``pending_per_ip`` unpaid enrolments on the plan."""

    def __init__(self, retry_after: int) -> None:
        super().__init__("too many unpaid enrolments from this address", code=PENDING_CAP_CODE,
                         headers={"Retry-After": str(retry_after)})
        self.retry_after = retry_after


def enrol_ip_hash(plan_id: str, client_ip: str) -> str:
    """What identifies one visitor's enrolments on one plan, without keeping the address."""
    return hashlib.sha256(f"{plan_id}\n{client_ip}".encode()).hexdigest()


async def enrol_pending(gateway: "Gateway", plan_id: str, *, customer_ref: str | None, customer_email: str | None,
                        client_ip: str) -> str:
    """Enrol a customer from the page; the first invoice's pay URL to send them to.

    Raises 400 ``plan_not_found_or_disabled`` when the plan went away, 429
    ``too_many_pending_enrolments`` past the cap, and what minting raised
    (503 without a price, 400 ``currency_not_accepted``), after marking the
    enrolment EXPIRED so nothing bills it.
    """
    now = gateway.now()
    digest = enrol_ip_hash(plan_id, client_ip)
    cap = read_settings(gateway).pending_per_ip
    async with gateway.db.transaction():
        plan = await store.lock_plan(gateway, plan_id)
        if plan is None or not plan["enabled"]:
            raise InvalidRequest("plan not found or disabled", code=enrolment.PLAN_MISSING)
        if cap:
            count, first_expiry = await store.pending_from(gateway, plan_id, digest)
            if count >= cap:
                raise PendingCapReached(max(1, (first_expiry or now + 60) - now))
        row = enrolment.new_row(gateway, plan, status=PENDING, customer_ref=customer_ref,
                                customer_email=customer_email, start=now, enrol_ip_hash=digest)
        await store.insert_subscription(gateway, row)
        invoice = await billing.claim_period(gateway, row, plan, now)
    try:
        await billing.mint(gateway, invoice)
    except ApiError:
        await _lapse(gateway, row["id"], invoice["id"])
        raise
    opened = await store.subscription_row(gateway, row["id"])
    return str(opened["open_pay_url"])


async def _lapse(gateway: "Gateway", subscription_id: str, invoice_id: str) -> None:
    """The first invoice could not be minted: the enrolment ends EXPIRED, its claim expired (never retried)."""
    now = gateway.now()
    async with gateway.db.transaction():
        await store.lock_subscription(gateway, subscription_id)
        await store.resolve_invoice(gateway, invoice_id, {"status": INV_EXPIRED, "resolved_at": now})
        await store.update_subscription(gateway, subscription_id,
                                        {"status": EXPIRED, "ended_at": now, "pending_invoice_id": None})
