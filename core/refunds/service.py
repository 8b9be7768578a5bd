"""Refunds: a payout back to the payer, bounded by what the payment brought in.

A refund is an ordinary payout (same pipeline, same webhooks) in the
payment's ``pay_currency`` with ``refund_of_payment_id`` set. What may be
refunded is the sum of the payment's credited deposits (gross, so an
overpayment can be returned in full; the platform fee is not given back)
minus every refund that has not failed. The check and the new payout share
one transaction that holds the payment's row lock, so concurrent refunds of
one payment take turns and can never add up to more than it received.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import ROUND_DOWN, Decimal, localcontext
from typing import TYPE_CHECKING, Any, Mapping

import asyncpg

from ..ledger import book as ledger
from ..payouts import service as svc
from ..types.errors import InvalidRequest, NotFound, ValidationError
from ..types.statuses import PAID
from ..payments.service import coin_rate_in
from ..payments import minimums

from ..contract.gateway import PluginGateway as Gateway

if TYPE_CHECKING:  # pragma: no cover
    from ..money.coins import Coin


DEADLOCK_RETRIES = 3


@dataclass(frozen=True)
class RefundRequest:
    """What the merchant asked for; at most one of ``amount`` and ``amount_usd``."""

    destination: str
    amount: Decimal | None = None
    amount_usd: Decimal | None = None
    description: str | None = None
    external_id: str | None = None
    key_id: str | None = None
    request_id: str | None = None
    requested_by: str | None = None  # payouts.requested_by (the approval policy's requester)


@dataclass(frozen=True)
class RefundOutcome:
    payout: Mapping[str, Any]
    replay: bool
    refunded: int  # base units of non-failed refunds, this one included
    refundable: int  # credited minus refunded


async def refund_totals(gateway: "Gateway", track_id: str) -> tuple[int, int]:
    """(credited, refunded) base units of a payment: credited deposits, non-failed refunds."""
    db = gateway.db
    deposits = await db.fetch_all("SELECT amount FROM deposits WHERE track_id = :t AND status = 'CREDITED'",
                                  {"t": track_id})
    refunds = await db.fetch_all("SELECT amount FROM payouts WHERE refund_of_payment_id = :t AND status <> :f",
                                 {"t": track_id, "f": svc.FAILED})
    return sum(db.to_int(r["amount"]) for r in deposits), sum(db.to_int(r["amount"]) for r in refunds)


async def _usd_units(gateway: "Gateway", coin: "Coin", amount_usd: Decimal) -> int:
    """``amount_usd`` in base units at the current price, rounded down (never refund more than asked)."""
    rate = await coin_rate_in(gateway, coin.symbol, "USD")
    with localcontext() as ctx:
        ctx.prec = 120
        units = (amount_usd / rate).scaleb(coin.decimals).to_integral_value(rounding=ROUND_DOWN)
    if units <= 0:
        raise ValidationError({"amount_usd": "is too small to refund in this coin"})
    return int(units)


def _text(value: Decimal | None) -> str | None:
    return None if value is None else format(value.normalize(), "f")


async def refund_payment(gateway: "Gateway", merchant_id: str, track_id: str, request: RefundRequest) -> RefundOutcome:
    """Create the refund payout; an ``external_id`` seen before returns the first refund."""
    db = gateway.db
    payment = await db.fetch_one("SELECT * FROM payments WHERE track_id = :t", {"t": track_id})
    if payment is None or payment["merchant_id"] != merchant_id:
        raise NotFound()
    if request.amount is not None and request.amount_usd is not None:
        raise ValidationError({"amount": "give amount or amount_usd, not both"})
    if request.amount_usd is not None:
        minimums.check_fiat_amount(request.amount_usd, "USD", "amount_usd")  # cents at most, like any USD amount
    route = svc.payout_route(gateway, payment["pay_currency"])
    destination = svc.check_destination(route, request.destination)
    asked = None
    if request.amount is not None:
        asked = svc.payout_units(route.coin, request.amount)
    idem_key = svc.namespaced(svc.REFUND_NS, request.external_id)
    draft = svc.PayoutRequest(
        route=route, destination=destination, amount=0, description=request.description, idem_key=idem_key,
        request_hash=svc.fingerprint(payment=track_id, destination=destination, amount=asked,
                                     amount_usd=_text(request.amount_usd), description=request.description),
        external_id=request.external_id, refund_of_payment_id=track_id, key_id=request.key_id,
        request_id=request.request_id, requested_by=request.requested_by)
    if idem_key:
        existing = await svc.find_by_key(gateway, merchant_id, idem_key)
        if existing is not None:
            return await _outcome(gateway, svc.replay_of(existing, draft), track_id)
    if request.amount_usd is not None:
        asked = await _usd_units(gateway, route.coin, request.amount_usd)  # a price look-up: before the lock
    draft = await svc.quoted_for_hold(gateway, merchant_id, draft)  # the approval policy's price: likewise
    for attempt in range(DEADLOCK_RETRIES):
        try:
            async with db.transaction():
                locked = await db.fetch_one(f"SELECT status FROM payments WHERE track_id = :t{db.for_update}",
                                            {"t": track_id})
                assert locked is not None, "payments are never deleted"
                outcome = await _reserve_refund(gateway, merchant_id, locked["status"], draft, asked)
            break
        except asyncpg.exceptions.DeadlockDetectedError:
            # A deposit being credited to this payment locks the balance, then the payment;
            # a refund locks them the other way round. PostgreSQL aborts one: start over.
            if attempt == DEADLOCK_RETRIES - 1:
                raise
    if outcome.posted is not None:
        await ledger.notify_posted(gateway, outcome.posted)
    return await _outcome(gateway, outcome, track_id)


async def _reserve_refund(gateway: "Gateway", merchant_id: str, payment_status: str, draft: svc.PayoutRequest,
                          asked: int | None) -> svc.PayoutOutcome:
    """Inside the transaction holding the payment's lock: replay, or check the totals and reserve."""
    if draft.idem_key:
        existing = await svc.find_by_key(gateway, merchant_id, draft.idem_key)
        if existing is not None:
            return svc.replay_of(existing, draft)
    if payment_status != PAID:
        raise InvalidRequest(f"only a Paid payment can be refunded (this one is {payment_status})",
                             code="payment_not_refundable")
    coin = draft.route.coin
    assert draft.refund_of_payment_id is not None, "a refund draft names its payment"
    credited, refunded = await refund_totals(gateway, draft.refund_of_payment_id)
    remaining = credited - refunded
    units = remaining if asked is None else asked
    if units <= 0 or units > remaining:
        raise InvalidRequest("refund exceeds the refundable amount", code="refund_exceeds_payment",
                             detail={"refundable": coin.format(max(remaining, 0))})
    svc.payout_units(coin, coin.format(units))  # the remainder, too, must reach min_payout
    return await svc.reserve_payout(gateway, merchant_id, replace(draft, amount=units))


async def _outcome(gateway: "Gateway", outcome: svc.PayoutOutcome, track_id: str) -> RefundOutcome:
    credited, refunded = await refund_totals(gateway, track_id)
    return RefundOutcome(outcome.row, outcome.replay, refunded, max(0, credited - refunded))


def refund_view(gateway: "Gateway", outcome: RefundOutcome) -> dict[str, Any]:
    """Response data: the payout (SPEC 2.5) plus the payment's refund totals after it."""
    coin = gateway.coins.require(outcome.payout["coin"])
    view = svc.payout_view(gateway, outcome.payout)
    view["refunded_total"] = coin.format(outcome.refunded)
    view["refundable_remaining"] = coin.format(outcome.refundable)
    if outcome.replay:
        view["idempotent"] = True
    return view
