"""Enrolments that open their first period's invoice at once (SPEC 3.4, 4.5, 4.14; issues 29, 32).

Nobody waits for the 5-minute billing tick: the first period is claimed in
the transaction that stores the subscription and minted right after it
(``billing.claim_period`` and ``billing.mint``, the tick's own idempotent
steps), so the answer already carries the invoice's pay URL. The claim keeps
it to one invoice per period: the subscription points at it
(``pending_invoice_id``), which the tick's ``due_subscriptions`` skips, and a
mint cut short is finished by the tick under the same track id.

**The API and dashboard enrolment** (``enrol``) is ACTIVE, as SPEC 3.4 has
it; its first invoice is announced by ``subscription.invoiced`` like any
other. A ``start_at`` in the future opens nothing now: the tick invoices it
when due.

**The customer page's enrolment** (``enrol_pending``) is anonymous, so it
must cost the merchant nothing until someone pays: it is PENDING, and the
customer goes straight to the first invoice's hosted page, whose "Return to
merchant" link (once Paid) is the manage page. Paying it makes the
subscription ACTIVE (``billing.settle``); letting it expire makes it
EXPIRED, for good: the tick bills only ACTIVE subscriptions, no webhook is
sent for it, and the core prunes the unpaid invoice (and the plugin the
enrolment) after ``unpaid_retention_days``. A retried post (a double click,
a reload, the back button) from the same visitor with the same fields,
while that invoice is still payable, is sent to the same invoice instead of
opening another.

One visitor holds at most ``pending_per_ip`` unpaid enrolments per plan:
the plan row is locked while they are counted and the new one is stored,
so parallel posts cannot pass the cap together. Only a digest of (plan, IP)
is stored, never the address.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Mapping

from ...api import ApiError, Conflict, InvalidRequest, RateLimited, found, validate
from . import billing, enrolment, store
from .settings import read_settings
from .store import ACTIVE, EXPIRED, INV_EXPIRED, MINTING, PENDING

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

PENDING_CAP_CODE = "too_many_pending_enrolments"


class PendingCapReached(RateLimited):
    """429: this visitor already holds ``pending_per_ip`` unpaid enrolments on the plan."""

    def __init__(self, retry_after: int) -> None:
        super().__init__("too many unpaid enrolments from this address", code=PENDING_CAP_CODE,
                         headers={"Retry-After": str(retry_after)})
        self.retry_after = retry_after


async def enrol(gateway: "Gateway", merchant_id: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
    """An ACTIVE subscription to an enabled plan of ``merchant_id``, its first invoice open when it starts now.

    A failed mint (no price: 503) does not undo the enrolment: it is written to
    ``last_error`` and the tick retries the claimed period. With an
    ``idempotency_key`` the merchant already used, the answer is the
    subscription that key created (when plan, customer_ref and customer_email
    match; else 409 ``idempotency_key_reused``): a retried request never
    enrols, and bills, the customer twice.
    """
    clean = validate(body, enrolment.CREATE_FIELDS)
    key = clean["idempotency_key"]
    if key:
        earlier = await store.subscription_by_key(gateway, merchant_id, key)
        if earlier is not None:
            return _same_enrolment(earlier, clean)
    now = gateway.now()
    start = enrolment.parse_start_at(clean["start_at"], now)
    plan = await store.public_plan(gateway, clean["plan_id"])
    if plan is None or plan["merchant_id"] != merchant_id or not plan["enabled"]:
        raise InvalidRequest("plan not found or disabled", code=enrolment.PLAN_MISSING)
    row = enrolment.new_row(gateway, plan, status=ACTIVE, customer_ref=clean["customer_ref"],
                            customer_email=clean["customer_email"], start=start, idempotency_key=key)
    async with gateway.db.transaction():
        if not key:
            await store.insert_subscription(gateway, row)
        elif not await store.claim_keyed_subscription(gateway, row):
            twin = await store.subscription_by_key(gateway, merchant_id, key)  # a parallel twin won the key
            return _same_enrolment(found(twin), clean)
        invoice = await billing.claim_period(gateway, row, plan, now) if start <= now else None
    if invoice is not None:
        await billing.mint_guarded(gateway, invoice)
    return await store.subscription_of(gateway, merchant_id, row["id"])


def _same_enrolment(earlier: Mapping[str, Any], clean: Mapping[str, Any]) -> Mapping[str, Any]:
    """The earlier subscription when the retry asks for the same enrolment; else 409."""
    asked = (clean["plan_id"], clean["customer_ref"], clean["customer_email"])
    if (earlier["plan_id"], earlier["customer_ref"], earlier["customer_email"]) != asked:
        raise Conflict("idempotency_key was already used for a different subscription",
                       code="idempotency_key_reused")
    return earlier


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
        # The same visitor posting the same form again: the same invoice, no slot of the cap used.
        invoice = await store.payable_pending(gateway, plan_id, digest, customer_email=customer_email,
                                              customer_ref=customer_ref, now=now)
        if invoice is None:
            if cap:
                count, first_expiry = await store.pending_from(gateway, plan_id, digest)
                if count >= cap:
                    raise PendingCapReached(max(1, (first_expiry or now + 60) - now))
            row = enrolment.new_row(gateway, plan, status=PENDING, customer_ref=customer_ref,
                                    customer_email=customer_email, start=now, enrol_ip_hash=digest)
            await store.insert_subscription(gateway, row)
            invoice = await billing.claim_period(gateway, row, plan, now)
    if invoice["status"] == MINTING:  # a retry may find the first post still minting: finishing it is safe
        try:
            await billing.mint(gateway, invoice)
        except ApiError:
            await _lapse(gateway, invoice["subscription_id"], invoice["id"])
            raise
    opened = await store.subscription_row(gateway, invoice["subscription_id"])
    return str(opened["open_pay_url"])


async def _lapse(gateway: "Gateway", subscription_id: str, invoice_id: str) -> None:
    """The first invoice could not be minted: the enrolment ends EXPIRED, its claim expired (never retried)."""
    now = gateway.now()
    async with gateway.db.transaction():
        await store.lock_subscription(gateway, subscription_id)
        await store.resolve_invoice(gateway, invoice_id, {"status": INV_EXPIRED, "resolved_at": now})
        await store.update_subscription(gateway, subscription_id,
                                        {"status": EXPIRED, "ended_at": now, "pending_invoice_id": None})
