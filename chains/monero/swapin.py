"""The seam between XMR detection and the conversion: XMR is credited to a swap-in account, never to a merchant.

SPEC 2.7: XMR is never custodied as a balance; it is swapped into the
merchant's default settlement coin. So the credit of an XMR deposit (from
``filter_credit_postings``) moves the whole deposit from ``world:monero`` into
``monero:swap_in`` (no merchant posting, no fee in XMR: the fee is charged
once on the deposit by the converter, in the settlement coin; the core's
proposed XMR fee is kept on the row for it), and ``decide_credit_status``
holds the deposit CONFIRMED: the payment stays Paying until the converter
calls ``orbchain.api.complete_credit``.

A converter (the ``swaps`` plugin) uses two functions here:

* ``awaiting(gateway)``: the XMR deposits waiting, oldest first;
* ``take(gateway, deposit_id, to_account=..., reference=...)``: move one
  deposit's XMR out of ``monero:swap_in`` into its own account (a venue's
  ``swap:<venue>``), once; inside the caller's transaction when there is one,
  so the converter's own rows commit with it.

Then it posts the settlement coin to the merchant and calls
``complete_credit``. docs/monero.md describes the whole path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from ...api import find_deposit, ledger
from .adapter import CHAIN

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway
    from ...api import Credit

SWAP_IN_ACCOUNT = "monero:swap_in"
HELD = "CONFIRMED"
AWAITING, TAKEN, REVERSED = "awaiting", "taken", "reversed"


class SwapIn(NamedTuple):
    """An XMR deposit credited into the swap-in account: ``amount`` and ``fee`` in piconero."""

    deposit_id: str
    merchant_id: str
    track_id: str | None
    amount: int
    fee: int
    status: str
    created_at: int


def _record(gateway: "Gateway", row: Any) -> SwapIn:
    return SwapIn(row["deposit_id"], row["merchant_id"], row["track_id"], gateway.db.to_int(row["amount"]),
                  gateway.db.to_int(row["fee"]), row["status"], int(row["created_at"]))


async def swap_in_postings(gateway: "Gateway", credit: "Credit",
                           postings: list[ledger.Posting]) -> list[ledger.Posting] | None:
    """``filter_credit_postings``: an XMR credit goes whole into ``monero:swap_in``; others are untouched."""
    if credit.chain != CHAIN:
        return None
    now = gateway.now()
    await gateway.db.execute(
        "INSERT INTO monero_swapins (deposit_id, merchant_id, track_id, amount, fee, status, created_at, updated_at)"
        " VALUES (:d, :m, :t, :a, :f, :s, :now, :now) ON CONFLICT (deposit_id) DO UPDATE SET status = :s,"
        " fee = :f, updated_at = :now WHERE monero_swapins.status = :rev",
        {"d": credit.deposit.id, "m": credit.merchant_id, "t": credit.track_id,
         "a": gateway.db.amount_param(credit.amount), "f": gateway.db.amount_param(credit.fee), "s": AWAITING,
         "now": now, "rev": REVERSED})
    return [ledger.Posting(ledger.world(CHAIN), credit.coin, -credit.amount),
            ledger.Posting(SWAP_IN_ACCOUNT, credit.coin, credit.amount)]


def credit_status(credit: "Credit") -> str | None:
    """``decide_credit_status``: an XMR deposit is CONFIRMED (awaiting conversion), never CREDITED here."""
    return HELD if credit.chain == CHAIN else None


async def mark_reversed(gateway: "Gateway", deposit_id: str) -> None:
    """A reorg took the credit back before a converter took the XMR: nothing is waiting any more."""
    await gateway.db.execute("UPDATE monero_swapins SET status = :r, updated_at = :now"
                             " WHERE deposit_id = :d AND status = :a",
                             {"r": REVERSED, "a": AWAITING, "d": deposit_id, "now": gateway.now()})


async def awaiting(gateway: "Gateway", limit: int = 100) -> list[SwapIn]:
    """XMR deposits waiting for conversion, oldest first."""
    rows = await gateway.db.fetch_all(
        "SELECT * FROM monero_swapins WHERE status = :a ORDER BY created_at, deposit_id LIMIT :l",
        {"a": AWAITING, "l": limit})
    return [_record(gateway, r) for r in rows]


async def find(gateway: "Gateway", deposit_id: str) -> SwapIn | None:
    row = await gateway.db.fetch_one("SELECT * FROM monero_swapins WHERE deposit_id = :d", {"d": deposit_id})
    return None if row is None else _record(gateway, row)


async def take(gateway: "Gateway", deposit_id: str, *, to_account: str,
               reference: str) -> ledger.LedgerTransaction | None:
    """Move the deposit's XMR from ``monero:swap_in`` to ``to_account``, once; None when it is not awaiting.

    Runs in the caller's transaction if there is one (the converter commits
    its own rows with it), else in its own. The deposit must still be held
    CONFIRMED: a deposit a reorg took back is not taken. A second call
    returns None and moves nothing. The caller fires ``ledger.notify_posted``
    after its commit.
    """
    db = gateway.db
    async with db.transaction():
        row = await db.fetch_one(f"SELECT * FROM monero_swapins WHERE deposit_id = :d{db.for_update}",
                                 {"d": deposit_id})
        if row is None or row["status"] != AWAITING:
            return None
        deposit = await find_deposit(gateway, deposit_id)
        if deposit is None or deposit.status != HELD:
            return None
        posted = await ledger.transfer(db, from_account=SWAP_IN_ACCOUNT, to_account=to_account, coin=deposit.coin,
                                       amount=db.to_int(row["amount"]), reference=reference, kind="monero_swap_in",
                                       merchant_id=row["merchant_id"], memo=f"XMR deposit {deposit_id} to convert")
        await db.execute("UPDATE monero_swapins SET status = :t, taken_to = :to, taken_reference = :ref,"
                         " updated_at = :now WHERE deposit_id = :d",
                         {"t": TAKEN, "to": to_account, "ref": reference, "now": gateway.now(), "d": deposit_id})
    return posted
