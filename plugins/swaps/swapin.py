"""XMR swap-in (SPEC 2.7): a confirmed XMR deposit converted into the merchant's settlement coin, never held as XMR.

The monero plugin credits a confirmed XMR deposit into its swap-in account
and holds the deposit CONFIRMED (``orbchain.chains.monero.swapin``). This
module is the converter on the other side of that seam; the swap job runs it
before advancing the swaps:

1. **Take, once.** For each awaiting deposit, in one transaction: ``take``
   moves its XMR into ``SWAPIN_HELD`` (this plugin's holding account), the
   first conversion attempt (a swap row of kind ``swapin``, idempotency key
   ``swapin:<deposit>:1``) is inserted and the XMR moves on to the venue
   account ``swap:<venue>``. ``take`` answers None for a deposit already
   taken or reversed, and the key is unique, so a repeated run or a second
   worker does nothing; a crash rolls all three back together.
2. **Convert.** The swap engine drives the attempt like any swap. On
   CONFIRMED it credits the merchant what the venue delivered minus the
   platform fee (the deposit's fee share, charged once, in the settlement
   coin) and calls ``complete_credit``: the payment goes Paid and
   ``payment.paid`` carries ``settled_coin``/``settled_amount``.
3. **Never fall back to XMR.** A failed attempt (venue down past the create
   timeout, refused, promising materially less than a locked quote, failed
   and refunded) returns the XMR to ``SWAPIN_HELD``; the deposit stays
   CONFIRMED and the payment Paying, and a new attempt (``swapin:<d>:<n>``,
   a new swap id the venue has never seen) is opened after a backoff. Each
   failure is logged as an error for the operator and stays visible in the
   merchant's swap list.

The quote: the payment's locked quote when it has one (a white-label payment
created with ``settlement_coin``), enforced with ``fallback_bps`` while the
deposit is younger than ``create_timeout_seconds`` after the take; otherwise
(and after that window) the venue's promise when the order opens. The
settlement coin: the locked quote's, else the account's
``default_settlement_coin`` read at take time. Without one, or without a
venue for the pair, the XMR is not taken (it waits in the monero plugin's
account) and a warning is logged.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

from ...chains.monero import swapin as monero_swapin
from ...chains.monero.adapter import CHAIN as MONERO, SYMBOL as XMR
from ...api import ledger
from . import store
from .service import LEDGER_KIND, SWAPIN_HELD, venue_account
from .settings import read_settings
from .venue_registry import venues_of

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 300


class Target(NamedTuple):
    """Where one attempt converts to: the venue, the settlement coin, the quoted delivery (0: the venue's promise)."""

    venue: str
    to_coin: str
    quoted: int


def attempt_key(deposit_id: str, attempt: int) -> str:
    return f"swapin:{deposit_id}:{attempt}"


async def run(gateway: "Gateway") -> int:
    """Take every awaiting XMR deposit and reopen held ones whose backoff ran out; how many attempts opened."""
    if gateway.chains.get(MONERO) is None:
        return 0
    opened = 0
    for waiting in await monero_swapin.awaiting(gateway):
        opened += await take(gateway, waiting)
    for deposit_id in await store.swapins_to_retry(gateway):
        opened += await retry(gateway, deposit_id)
    return opened


async def _target(gateway: "Gateway", merchant_id: str, track_id: str | None, amount: int,
                  enforce_lock: bool) -> Target | None:
    """The settlement coin and venue for an XMR amount, or None (held: nothing to convert into or with)."""
    settings = read_settings(gateway.config)
    locked = await store.locked_quote(gateway, track_id) if track_id else None
    if locked is not None and locked["from_coin"] == XMR:
        to_coin, preferred = locked["to_coin"], locked["venue"]
    else:
        locked, to_coin, preferred = None, await store.default_coin(gateway, merchant_id), settings.venue
    if to_coin is None or to_coin == XMR:
        log.warning("XMR swap-in for merchant %s is held: no settlement coin", merchant_id)
        return None
    venue = venues_of(gateway).for_pair(XMR, to_coin, preferred)
    if venue is None:
        log.warning("XMR swap-in for merchant %s is held: no venue converts XMR to %s", merchant_id, to_coin)
        return None
    quoted = 0
    if locked is not None and enforce_lock and locked["from_amount"]:
        quoted = locked["to_amount"] * amount // locked["from_amount"]
    return Target(venue.name, to_coin, quoted)


def _row(gateway: "Gateway", *, deposit_id: str, merchant_id: str, track_id: str | None, amount: int, fee: int,
         target: Target, attempt: int) -> dict[str, Any]:
    now = gateway.now()
    return {
        "id": store.new_swap_id(), "merchant_id": merchant_id, "kind": store.SWAPIN, "venue": target.venue,
        "from_coin": XMR, "to_coin": target.to_coin, "from_amount": amount,
        "to_amount_quoted": target.quoted, "fee_amount": fee, "floating": True, "status": store.QUOTED,
        "fallback": False, "deposit_id": deposit_id, "track_id": track_id, "credit_done": False,
        "idempotency_key": attempt_key(deposit_id, attempt), "attempts": 0, "next_attempt_at": now,
        "deadline_at": now + read_settings(gateway.config).create_timeout_seconds, "created_at": now,
        "updated_at": now,
    }


async def _open(gateway: "Gateway", row: Mapping[str, Any]) -> ledger.LedgerTransaction | None:
    """Insert the attempt and move its XMR from the holding account to the venue account (caller's transaction)."""
    if await store.insert_swap(gateway, row) is None:
        return None
    return await ledger.transfer(
        gateway.db, from_account=SWAPIN_HELD, to_account=venue_account(row["venue"]), coin=row["from_coin"],
        amount=row["from_amount"], reference=f"swap:{row['id']}:in", kind=LEDGER_KIND,
        merchant_id=row["merchant_id"], memo=f"XMR deposit {row['deposit_id']} to convert")


class _NothingToDo(Exception):
    """Rolls back a take whose attempt another worker already opened."""


async def take(gateway: "Gateway", waiting: monero_swapin.SwapIn) -> int:
    """Take one awaiting deposit and open its first attempt, atomically; 0 when held or already taken."""
    target = await _target(gateway, waiting.merchant_id, waiting.track_id, waiting.amount, enforce_lock=True)
    if target is None:
        return 0
    row = _row(gateway, deposit_id=waiting.deposit_id, merchant_id=waiting.merchant_id, track_id=waiting.track_id,
               amount=waiting.amount, fee=waiting.fee, target=target, attempt=1)
    try:
        async with gateway.db.transaction():
            taken = await monero_swapin.take(gateway, waiting.deposit_id, to_account=SWAPIN_HELD,
                                             reference=f"swapin:{waiting.deposit_id}:take")
            if taken is None:
                return 0
            moved = await _open(gateway, row)
            if moved is None:
                raise _NothingToDo
    except _NothingToDo:
        return 0
    for posted in (taken, moved):
        await ledger.notify_posted(gateway, posted)
    return 1


async def retry(gateway: "Gateway", deposit_id: str) -> int:
    """Open the next attempt for a deposit whose attempts all failed, once its backoff ran out."""
    attempts = [r for r in await store.by_deposit(gateway, deposit_id) if r["kind"] == store.SWAPIN]
    if not attempts or any(r["status"] != store.FAILED for r in attempts):
        return 0
    settings = read_settings(gateway.config)
    first, last = attempts[0], attempts[-1]
    delay = min(MAX_BACKOFF_SECONDS, settings.retry_seconds * len(attempts))
    now = gateway.now()
    if now < int(last["updated_at"]) + delay:
        return 0
    enforce = now < int(first["created_at"]) + settings.create_timeout_seconds
    target = await _target(gateway, first["merchant_id"], first["track_id"], first["from_amount"], enforce)
    if target is None:
        return 0
    row = _row(gateway, deposit_id=deposit_id, merchant_id=first["merchant_id"], track_id=first["track_id"],
               amount=first["from_amount"], fee=first["fee_amount"] or 0, target=target, attempt=len(attempts) + 1)
    async with gateway.db.transaction():
        moved = await _open(gateway, row)
    if moved is None:
        return 0
    await ledger.notify_posted(gateway, moved)
    log.info("XMR swap-in of deposit %s: attempt %s opened (%s)", deposit_id, len(attempts) + 1, row["id"])
    return 1
