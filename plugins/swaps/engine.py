"""The swap job: drives every open swap to one outcome, resuming by swap id after any crash.

States (SPEC 3.5): QUOTED (source in the venue account, no order yet) ->
PENDING (the venue has the order) -> CONFIRMED (target credited) or FAILED
(source credited back in full). Every step is safe to repeat:

* the venue call is idempotent by our swap id (the contract's rule);
* each ledger movement has a reference derived from the swap id, so a
  replay posts nothing twice;
* each state change is a conditional update made in the same database
  transaction as its ledger movement: the change and the money commit
  together or not at all, and a second worker finds the row moved on.

Ledger, for a venue that takes the source from the books (``funded``)::

    commit:   merchant available (FROM)  -> swap:<venue> (FROM)
    confirm:  swap:<venue> (FROM)        -> world:venue-<venue> (FROM)
              world:venue-<venue> (TO)   -> merchant available (TO, actual)
    fail:     swap:<venue> (FROM)        -> merchant available (FROM)

For a venue the gateway pays on-chain (``funded`` False), the deposit is a
payout through the core payout pipeline (``swap:<id>:payin``): the source
goes back from the venue account to the merchant and out as that payout
in one transaction, so a failed payout is re-credited by the pipeline; a
refund arriving from the venue is credited from ``world:venue-<venue>``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Mapping

from ...api import ApiError, complete_credit, ledger, payout_statuses, request_payout
from . import store, venuein
from .service import LEDGER_KIND, SWAPIN_HELD, platform_fee, venue_account, venue_world
from .settings import SwapSettings, read_settings
from .venue_registry import venues_of
from .venues import (
    EXCHANGING, EXPIRED, FAILED as VENUE_FAILED, FINISHED, REFUNDED, WAITING, SwapVenue, VenueError, VenueOrder,
    VenueQuote, VenueRefused, VenueStatus, VenueUnavailable,
)

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger(__name__)

JOB_NAME = "swaps.advance"
JOB_SECONDS = 5
MAX_BACKOFF_SECONDS = 300
# failure_reason values
VENUE_TIMEOUT, VENUE_SHORT, PAYIN_FAILED = "venue_timeout", "venue_short", "payin_failed"
PAYIN_UNSUPPORTED = "payin_unsupported"

Swap = Mapping[str, Any]


async def run_swaps(gateway: "Gateway") -> int:
    """The periodic job: open XMR swap-in attempts, then advance every due swap; returns how many were looked at."""
    from . import swapin  # it uses this module's engine through the rows it opens

    try:
        await swapin.run(gateway)
    except Exception:  # the swaps already open must still advance
        log.exception("opening XMR swap-in attempts failed")
    try:
        await venuein.follow_all(gateway)
    except Exception:  # the other swaps must still advance
        log.exception("following deposit-venue XMR swap-ins failed")
    rows = await store.due(gateway)
    for row in rows:
        try:
            await advance(gateway, row)
        except Exception:  # one broken swap must not stop the others; it is retried next tick
            log.exception("advancing swap %s failed", row["id"])
    return len(rows)


async def advance(gateway: "Gateway", row: Swap) -> None:
    """Move one swap as far as it goes now, whatever state a crash left it in.

    A freshly opened order is asked about at once, so a venue that finishes
    immediately (the devnet's) confirms in one tick.
    """
    await _step(gateway, row)
    if row["status"] == store.QUOTED:
        after = await store.get(gateway, row["id"])
        if after is not None and after["status"] == store.PENDING and int(after["next_attempt_at"]) <= gateway.now():
            await _step(gateway, after)


async def _step(gateway: "Gateway", row: Swap) -> None:
    settings = read_settings(gateway.config)
    if row["status"] in (store.CONFIRMED, store.FAILED):
        await _finish_credit(gateway, row)
        return
    venue = venues_of(gateway).get(row["venue"])
    if venue is None:
        await _retry(gateway, row, settings, "venue not installed")
        return
    try:
        if row["status"] == store.QUOTED:
            await _open_order(gateway, venue, row, settings)
        else:
            await _follow_order(gateway, venue, row, settings)
    except VenueUnavailable as exc:
        if row["status"] == store.QUOTED and gateway.now() >= int(row["deadline_at"]):
            await fail(gateway, row, VENUE_TIMEOUT)
        else:
            await _retry(gateway, row, settings, exc.reason)


async def _retry(gateway: "Gateway", row: Swap, settings: SwapSettings, why: str) -> None:
    attempts = int(row["attempts"]) + 1
    delay = min(MAX_BACKOFF_SECONDS, settings.retry_seconds * attempts)
    await store.move(gateway, row["id"], row["status"], attempts=attempts, next_attempt_at=gateway.now() + delay)
    log.info("swap %s: %s; retrying in %ss", row["id"], why, delay)


def _short(promised: int, quoted: int, settings: SwapSettings) -> bool:
    """Materially less than quoted: below the quote by more than ``fallback_bps`` (docs/decisions.md)."""
    return promised * 10000 < quoted * (10000 - settings.fallback_bps)


def _addresses(gateway: "Gateway", row: Swap, settings: SwapSettings) -> tuple[str | None, str | None]:
    return settings.payout_addresses.get(row["to_coin"]), settings.refund_addresses.get(row["from_coin"])


async def _open_order(gateway: "Gateway", venue: SwapVenue, row: Swap, settings: SwapSettings) -> None:
    """QUOTED: open the order at the venue (idempotent by swap id), check its promise, fund it."""
    if gateway.now() >= int(row["deadline_at"]):
        await fail(gateway, row, VENUE_TIMEOUT)
        return
    quote = VenueQuote(venue.name, row["from_coin"], row["to_coin"], row["from_amount"], row["to_amount_quoted"],
                       0, int(row["deadline_at"]), row["floating"])
    payout_address, refund_address = _addresses(gateway, row, settings)
    try:
        order = await venue.create_swap(row["id"], quote, payout_address=payout_address,
                                        refund_address=refund_address)
    except VenueRefused as exc:
        await fail(gateway, row, f"venue_refused: {exc.reason}")
        return
    if not row["to_amount_quoted"]:  # auto-settle by the account default: the venue's promise is the quote
        row = await store.move(gateway, row["id"], store.QUOTED, to_amount_quoted=order.to_amount) or row
    if _short(order.to_amount, row["to_amount_quoted"], settings):
        # Refuse the conversion before any money reaches the venue (auto-settle: swap_fallback).
        await _cancel_quietly(venue, row, order, refund_address)
        await fail(gateway, row, VENUE_SHORT, fallback=True)
        return
    if order.funded:
        await store.move(gateway, row["id"], store.QUOTED, status=store.PENDING, venue_ref=order.venue_ref,
                         deposit_address=order.deposit_address, funded=True, attempts=0,
                         next_attempt_at=gateway.now())
        return
    if not gateway.coins.require(row["from_coin"]).payable:
        # The payout pipeline cannot send a source-only coin (XMR): refuse the order before anything moves.
        await _cancel_quietly(venue, row, order, refund_address)
        await fail(gateway, row, f"{PAYIN_UNSUPPORTED}: {row['from_coin']} cannot be sent to this venue")
        return
    await _pay_in(gateway, row, order)


async def _cancel_quietly(venue: SwapVenue, row: Swap, order: VenueOrder, refund_address: str | None) -> None:
    try:
        await venue.refund(row["id"], order.venue_ref, refund_address)
    except VenueError as exc:  # an unfunded order simply expires at the venue
        log.info("swap %s: cancelling the short order: %s", row["id"], exc.reason)


async def _pay_in(gateway: "Gateway", row: Swap, order: VenueOrder) -> None:
    """Send the deposit through the payout pipeline; the row, the ledger and the payout commit together."""
    db = gateway.db
    merchant_id, coin, amount = row["merchant_id"], row["from_coin"], row["from_amount"]
    if order.deposit_amount != amount:
        await fail(gateway, row, "venue_refused: deposit amount differs from the swap")
        return
    posted = None
    try:
        async with db.transaction():
            moved = await store.move(gateway, row["id"], store.QUOTED, status=store.PENDING,
                                     venue_ref=order.venue_ref, deposit_address=order.deposit_address,
                                     funded=False, attempts=0, next_attempt_at=gateway.now())
            if moved is None:
                return
            posted = await ledger.transfer(
                db, from_account=venue_account(row["venue"]), to_account=ledger.merchant_available(merchant_id),
                coin=coin, amount=amount, reference=f"swap:{row['id']}:payin", kind=LEDGER_KIND,
                merchant_id=merchant_id)
            payout = await request_payout(
                gateway, merchant_id, coin=coin, destination=order.deposit_address, amount=amount,
                idempotency_key=f"swap:{row['id']}:payin", description=f"swap {row['id']} deposit",
                holdable=False)  # the venue's order expires: an approval hold would strand the swap
            await store.move(gateway, row["id"], store.PENDING, payin_payout_id=payout.id)
    except ApiError as exc:  # the address or amount is not payable here: nothing moved
        await fail(gateway, row, f"{PAYIN_FAILED}: {exc.code or exc.message}")
        return
    if posted is not None:
        await ledger.notify_posted(gateway, posted)


async def _follow_order(gateway: "Gateway", venue: SwapVenue, row: Swap, settings: SwapSettings) -> None:
    """PENDING: ask the venue where the order stands and act on a final answer."""
    if not row["funded"] and row["payin_payout_id"]:
        statuses = await payout_statuses(gateway, [row["payin_payout_id"]])
        if statuses.get(row["payin_payout_id"]) == "Failed":  # the pipeline re-credited the merchant
            await fail(gateway, row, PAYIN_FAILED, refund=False)
            return
    try:
        status = await venue.status(row["id"], row["venue_ref"])
    except VenueRefused as exc:
        if row["funded"]:  # the venue lost a self-funded order: nothing was sent anywhere
            await fail(gateway, row, f"venue_refused: {exc.reason}")
        else:
            await _retry(gateway, row, settings, exc.reason)
        return
    if status.state == FINISHED:
        await confirm(gateway, row, status)
    elif status.state == REFUNDED:
        await fail(gateway, row, status.reason or "refunded by the venue", status=status)
    elif status.state == EXPIRED and row["funded"]:
        await fail(gateway, row, status.reason or "expired at the venue", status=status)
    elif status.state in (VENUE_FAILED, EXPIRED):
        refund_address = _addresses(gateway, row, settings)[1]
        refunded = await venue.refund(row["id"], row["venue_ref"], refund_address)
        if refunded.state == REFUNDED:
            await fail(gateway, row, status.reason or "exchange failed", status=refunded)
        else:
            await _retry(gateway, row, settings, "waiting for the venue's refund")
    else:
        assert status.state in (WAITING, EXCHANGING)
        if status.payin_hash and status.payin_hash != row["payin_hash"]:
            await store.move(gateway, row["id"], store.PENDING, payin_hash=status.payin_hash)
        await _retry(gateway, row, settings, f"order {status.state}")


async def confirm(gateway: "Gateway", row: Swap, status: VenueStatus) -> None:
    """PENDING -> CONFIRMED: the target coin (the actual amount) credited, the source leaves the books."""
    actual = int(status.actual_to_amount or 0)
    merchant_id, venue = row["merchant_id"], row["venue"]
    postings = []
    if row["funded"]:
        postings += [ledger.Posting(venue_account(venue), row["from_coin"], -row["from_amount"]),
                     ledger.Posting(venue_world(venue), row["from_coin"], row["from_amount"])]
    if actual:
        fee = platform_fee(row, actual)
        postings += [ledger.Posting(venue_world(venue), row["to_coin"], -actual),
                     ledger.Posting(ledger.merchant_available(merchant_id), row["to_coin"], actual - fee)]
        if fee:
            postings.append(ledger.Posting(ledger.PLATFORM_FEES, row["to_coin"], fee))
    posted = None
    async with gateway.db.transaction():
        moved = await store.move(gateway, row["id"], store.PENDING, status=store.CONFIRMED, actual_to_amount=actual,
                                 payin_hash=status.payin_hash or row["payin_hash"], payout_hash=status.payout_hash)
        if moved is None:
            return
        if postings:
            posted = await ledger.post(gateway.db, kind=LEDGER_KIND, reference=f"swap:{row['id']}:settle",
                                       postings=postings, merchant_id=merchant_id)
    if posted is not None:
        await ledger.notify_posted(gateway, posted)
    await _finish_credit(gateway, moved)


async def fail(gateway: "Gateway", row: Swap, reason: str, *, fallback: bool = False,
               status: VenueStatus | None = None, refund: bool = True) -> None:
    """QUOTED or PENDING -> FAILED, the source credited back in full (unless a failed payin already did).

    A swap-in attempt (XMR) is never credited back to the merchant: its source
    returns to the swap-in holding account and another attempt follows
    (``swapin.py``); no fallback to a coin the merchant cannot hold.
    """
    merchant_id, venue, coin, amount = row["merchant_id"], row["venue"], row["from_coin"], row["from_amount"]
    # Before the deposit left the books the source is still in the venue account; after, it comes back from the venue.
    paid_in = row["status"] == store.PENDING and not row["funded"]
    source = venue_world(venue) if paid_in else venue_account(venue)
    swap_in = row["kind"] == store.SWAPIN
    destination = SWAPIN_HELD if swap_in else ledger.merchant_available(merchant_id)
    posted = None
    async with gateway.db.transaction():
        moved = await store.move(gateway, row["id"], row["status"], status=store.FAILED, failure_reason=reason[:500],
                                 fallback=fallback and not swap_in, credit_done=row["credit_done"] or swap_in,
                                 refund_hash=status.refund_hash if status else None,
                                 payin_hash=(status.payin_hash if status else None) or row["payin_hash"])
        if moved is None:
            return
        if swap_in:
            log.error("XMR swap-in %s (deposit %s) failed: %s; the XMR is held and retried", row["id"],
                      row["deposit_id"], reason)
        if refund:
            posted = await ledger.transfer(
                gateway.db, from_account=source, to_account=destination, coin=coin,
                amount=amount, reference=f"swap:{row['id']}:refund", kind=LEDGER_KIND, merchant_id=merchant_id)
    if posted is not None:
        await ledger.notify_posted(gateway, posted)
    await _finish_credit(gateway, moved)


async def _finish_credit(gateway: "Gateway", row: Swap) -> None:
    """Auto-settle: once the conversion is final, the held deposit becomes CREDITED (the payment can be Paid)."""
    if row["kind"] not in store.CREDITING or row["credit_done"] or not row["deposit_id"]:
        return
    await complete_credit(gateway, row["deposit_id"])
    await store.move(gateway, row["id"], row["status"], credit_done=True)
