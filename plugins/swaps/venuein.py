"""XMR swap-in through a venue that needs the deposit (``SwapVenue.needs_deposit``): never custodied, never sent by us.

The gateway's Monero wallet is view-only: it cannot send, so a venue such
as ChangeNOW, which converts only XMR that reaches its own deposit address,
cannot be fed from the gateway. Instead the payer pays the venue directly
(SPEC 2.7's "the payer sees an XMR amount and address from the venue"):

1. **Open at creation** (``decide_receive_target``). For an XMR payment
   whose account default settlement coin is converted by a deposit venue,
   the venue is quoted for the payment's XMR amount and the order is opened
   under a new swap id, its payout address a fresh address of the merchant
   in the settlement coin, derived and watched by the core. The payment's
   address and amount are the order's deposit address and amount. The swap
   row (kind ``venuein``, PENDING) records the order; no money is booked:
   the XMR never touches the gateway's books or wallet.
2. **Follow** (the swaps job, by swap id). The venue's status gives the
   payin hash, the payout hash and failures: a failed, refunded or expired
   order is FAILED with its reason (the payment is left to expire at its
   own lifetime; with ``[plugin.swaps.refund_addresses] XMR`` a failed
   order's refund is asked for once).
3. **Credit** (the core's scanner). The venue's payout arrives on a normal
   chain at the payout address; ``decide_deposit_payment`` attaches that deposit to
   the payment, it is credited like any deposit (platform fee once, in the
   settlement coin), ``filter_credit_postings`` marks the order CONFIRMED in the
   same transaction, and ``decide_payment_covered`` makes the payment Paid: the
   payout is the payment, whatever XMR amount it came from. Delivered
   materially less than the order promised (``fallback_bps``):
   ``swap_fallback`` is true (docs/decisions.md).

A venue without ``needs_deposit`` (the devnet venue) is not routed here:
the monero plugin's subaddress route (``swapin.py``) handles it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ...chains.monero.adapter import CHAIN as MONERO, SYMBOL as XMR
from ...api import AddressError, ReceiveTarget, ServiceUnavailable, ValidationError, find_payment, fresh_receive_address
from . import store
from .service import venue_quote
from .settings import read_settings
from .venue_registry import venues_of
from .venues import (
    EXPIRED, FAILED as VENUE_FAILED, FINISHED, REFUNDED, SwapVenue, VenueError, VenueRefused, VenueUnavailable,
)

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Coin
    from ...api import Gateway
    from ...api import Credit

log = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 300
# failure_reason values of a deposit-venue order
REASONS = {VENUE_FAILED: "venue_failed", REFUNDED: "venue_refunded", EXPIRED: "venue_expired"}
PAYMENT_GONE = "payment_closed"
REFUND_FIELD = "refund_address"


def _deposit_venue(gateway: "Gateway", from_coin: str, to_coin: str) -> SwapVenue | None:
    venue = venues_of(gateway).for_pair(from_coin, to_coin, read_settings(gateway.config).venue)
    return venue if venue is not None and venue.needs_deposit else None


async def receive_target(gateway: "Gateway", payment: Mapping[str, Any], coin: "Coin") -> ReceiveTarget | None:
    """``decide_receive_target``: the venue's deposit address for an XMR payment, or None (another route)."""
    amount = payment.get("pay_amount")
    if not coin.settles_only_via_swap or amount is None:
        return None
    merchant_id = payment["merchant_id"]
    to_coin = await store.default_coin(gateway, merchant_id)
    if to_coin is None or to_coin == coin.symbol:
        return None
    venue = _deposit_venue(gateway, coin.symbol, to_coin)
    if venue is None:
        return None
    amount = int(amount)
    quote = await venue_quote(gateway, coin.symbol, to_coin, amount, venue)
    payout = (await fresh_receive_address(gateway, merchant_id, to_coin)).address
    settings = read_settings(gateway.config)
    swap_id = store.new_swap_id()
    try:
        order = await venue.create_swap(swap_id, quote, payout_address=payout,
                                        refund_address=settings.refund_addresses.get(coin.symbol))
    except VenueUnavailable:
        raise ServiceUnavailable("swap venue unavailable", code="venue_unavailable") from None
    except VenueRefused as exc:
        raise ValidationError({"amount": exc.reason}) from None
    if order.deposit_amount != amount:
        # The payer is shown the payment's amount: a venue expecting another one would under- or over-fill.
        raise ServiceUnavailable("swap venue asked for a different amount", code="venue_unavailable")
    now = gateway.now()
    expires = payment.get("expires_at")
    await store.insert_swap(gateway, {
        "id": swap_id, "merchant_id": merchant_id, "kind": store.VENUEIN, "venue": venue.name,
        "from_coin": coin.symbol, "to_coin": to_coin, "from_amount": amount, "to_amount_quoted": order.to_amount,
        "floating": quote.floating, "status": store.PENDING, "venue_ref": order.venue_ref,
        "deposit_address": order.deposit_address, "funded": False, "fallback": False, "track_id": payment["track_id"],
        "credit_done": False, "idempotency_key": f"venuein:{swap_id}", "attempts": 0, "next_attempt_at": now,
        "deadline_at": int(expires) if expires else now + settings.create_timeout_seconds,
        "payout_address": payout, "created_at": now, "updated_at": now,
    })
    to = gateway.coins.require(to_coin)
    return ReceiveTarget(order.deposit_address, extra={"swap": {
        "venue": venue.name, "swap_id": swap_id, "settlement_coin": to_coin,
        "settlement_amount_quoted": to.format(order.to_amount)}})


# -- the payer's refund address ------------------------------------------------------------------


def parse_refund_address(gateway: "Gateway", value: Any, payment_type: str, merchant_id: str) -> str:
    """``refund_address`` of a create body: the payer's XMR address for a refund of a failed exchange."""
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise ValidationError({REFUND_FIELD: "must be an XMR address"})
    adapter = gateway.chains.get(MONERO)
    network = adapter.network if adapter is not None else "mainnet"
    try:
        return gateway.address_families.validate(gateway.coins.require(XMR).address_family, value.strip(), network)
    except AddressError as exc:
        raise ValidationError({REFUND_FIELD: str(exc)}) from None


async def store_refund_address(gateway: "Gateway", payment: Any, value: str) -> None:
    """Keep it on the payment's deposit-venue order (inside the creating transaction); 400 for any other payment."""
    updated = await gateway.db.fetch_all(
        "UPDATE swaps SET refund_address = :r WHERE kind = :k AND track_id = :t AND status = :p RETURNING id",
        {"r": value, "k": store.VENUEIN, "t": payment.track_id, "p": store.PENDING})
    if not updated:
        raise ValidationError({REFUND_FIELD: "is accepted on XMR payments paid at a swap venue's address"})


# -- the scanner's side -------------------------------------------------------------------------


async def deposit_payment(gateway: "Gateway", coin: str, address: str, merchant_id: str) -> str | None:
    """``decide_deposit_payment``: a venue's payout to the order's payout address belongs to the order's payment."""
    row = await store.venuein_by_payout(gateway, merchant_id, coin, address)
    return None if row is None else row["track_id"]


async def on_credit(gateway: "Gateway", credit: "Credit") -> bool:
    """In the crediting transaction: a payout of an open order marks it CONFIRMED; True when it was one."""
    if credit.track_id is None:
        return False
    row = await store.venuein_by_payout(gateway, credit.merchant_id, credit.coin, credit.deposit.address or "")
    if row is None or row["track_id"] != credit.track_id:
        return False
    short = credit.amount * 10000 < row["to_amount_quoted"] * (10000 - read_settings(gateway.config).fallback_bps)
    await store.move(gateway, row["id"], (store.PENDING, store.FAILED), status=store.CONFIRMED,
                     actual_to_amount=credit.amount, settled_amount=credit.amount - credit.fee, fallback=short,
                     credit_done=True, failure_reason="venue_short" if short else None)
    return True


async def covered(gateway: "Gateway", payment: Mapping[str, Any]) -> bool | None:
    """``decide_payment_covered``: a payment opened at a deposit venue is Paid once an order's payout is credited."""
    coin = gateway.coins.get(payment["pay_currency"])
    if coin is None or not coin.settles_only_via_swap:
        return None  # only a swap-only coin is paid at a venue's address: no look-up for every other payment
    rows = [r for r in await store.by_track_id(gateway, payment["track_id"]) if r["kind"] == store.VENUEIN]
    if not rows:
        return None
    return any(r["status"] == store.CONFIRMED for r in rows)


async def held_open(gateway: "Gateway", payment: Mapping[str, Any]) -> bool | None:
    """``decide_payment_held_open``: the venue reported the payer's XMR (a payin hash) and its order is still open."""
    coin = gateway.coins.get(payment["pay_currency"])
    if coin is None or not coin.settles_only_via_swap:
        return None
    rows = await store.by_track_id(gateway, payment["track_id"])
    return True if any(r["kind"] == store.VENUEIN and r["status"] == store.PENDING and r["payin_hash"]
                       for r in rows) else None


def webhook_fields(gateway: "Gateway", rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """``settled_coin``/``settled_amount``/``swap_fallback`` of a payment paid through a deposit venue."""
    done = [r for r in rows if r["kind"] == store.VENUEIN and r["status"] == store.CONFIRMED]
    if not done:
        return None
    coin = done[0]["to_coin"]
    return {"settled_coin": coin, "swap_fallback": any(r["fallback"] for r in done),
            "settled_amount": gateway.coins.require(coin).format(sum(r["settled_amount"] or 0 for r in done))}


# -- following the order ------------------------------------------------------------------------


async def follow_all(gateway: "Gateway") -> int:
    """The swaps job's part: ask the venue about every open deposit-venue order that is due."""
    rows = await store.venuein_due(gateway)
    for row in rows:
        try:
            await follow(gateway, row)
        except Exception:  # one broken order must not stop the others; it is asked again next tick
            log.exception("following deposit-venue swap %s failed", row["id"])
    return len(rows)


async def _later(gateway: "Gateway", row: Mapping[str, Any], why: str, **changes: Any) -> None:
    attempts = int(row["attempts"]) + 1
    delay = min(MAX_BACKOFF_SECONDS, read_settings(gateway.config).retry_seconds * attempts)
    await store.move(gateway, row["id"], row["status"], attempts=attempts, next_attempt_at=gateway.now() + delay,
                     **changes)
    log.debug("deposit-venue swap %s: %s; asking again in %ss", row["id"], why, delay)


async def follow(gateway: "Gateway", row: Mapping[str, Any]) -> None:
    """One look at the order by our swap id: record what the venue reports, end it when it failed."""
    venue = venues_of(gateway).get(row["venue"])
    if venue is None:
        await _later(gateway, row, "venue not installed")
        return
    try:
        status = await venue.status(row["id"], row["venue_ref"])
    except VenueUnavailable as exc:
        await _later(gateway, row, exc.reason)
        return
    except VenueRefused as exc:
        await _fail(gateway, row, "venue_refused", exc.reason)
        return
    hashes = {k: v for k, v in (("payin_hash", status.payin_hash), ("payout_hash", status.payout_hash),
                                ("refund_hash", status.refund_hash)) if v}
    if row["status"] == store.CONFIRMED:  # credited already: only the venue's hashes are still to record
        await _later(gateway, row, status.state, **hashes)
        return
    if status.state in REASONS:
        if status.state == VENUE_FAILED:
            await _ask_refund(gateway, venue, row)
        await _fail(gateway, row, REASONS[status.state], status.reason, **hashes)
        return
    if status.state == FINISHED:
        # The payout is on its way to our address: the scanner credits it; the venue's figure is kept for the record.
        await _later(gateway, row, status.state, actual_to_amount=status.actual_to_amount, **hashes)
        return
    payment = await find_payment(gateway, row["track_id"])
    closed = (payment is None and gateway.now() > int(row["deadline_at"])) or (
        payment is not None and payment.status not in ("Waiting", "Paying"))
    if closed and not status.payin_hash:  # the payment's creation failed, or it expired unpaid
        await _fail(gateway, row, PAYMENT_GONE, f"payment {payment.status if payment else 'missing'}", **hashes)
        return
    await _later(gateway, row, status.state, **hashes)


async def _ask_refund(gateway: "Gateway", venue: SwapVenue, row: Mapping[str, Any]) -> None:
    address = row.get("refund_address") or read_settings(gateway.config).refund_addresses.get(row["from_coin"])
    if not address:
        return  # the payer's refund is the operator's act with the venue (docs/swaps.md)
    try:
        await venue.refund(row["id"], row["venue_ref"], address)
    except VenueError as exc:
        log.warning("deposit-venue swap %s: refund not asked: %s", row["id"], exc.reason)


async def _fail(gateway: "Gateway", row: Mapping[str, Any], reason: str, detail: str | None,
                **hashes: Any) -> None:
    moved = await store.move(gateway, row["id"], store.PENDING, status=store.FAILED, failure_reason=reason,
                             credit_done=True, **hashes)
    if moved is not None:
        log.error("XMR swap-in %s through %s failed (%s%s); payment %s is not paid by it", row["id"], row["venue"],
                  reason, f": {detail}" if detail else "", row["track_id"])
