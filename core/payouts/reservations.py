"""A payout's reserve as the ledger has it: the proof both ends of its money use, never the row's own word.

At creation ``service.create_payout`` posts ``payout:<id>:reserve`` (kind
``payout_reserve``: merchant available -> ``payouts:<chain>:in_flight``,
with the binding digest of ``binding.py`` in its memo). The signer reads it
before signing (``signing_gate.py``) and a failed payout reads it before any
money is given back (``reserve_release.py``). Kept apart from both so
neither imports the other (and ``service.py`` can use the second).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..ledger.accounts import merchant_available, payouts_in_flight
from .binding import binding_key, binding_matches
from .signing_policy import Reservation

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway

Row = Mapping[str, Any]


def release_reference(payout_id: str) -> str:
    """The one reference under which a payout's reserve is given back (so twice is once)."""
    return f"payout:{payout_id}:release"


async def reservation_of(gateway: "Gateway", row: Row, *, binding: bool = True) -> tuple[Reservation | None, bool]:
    """The payout's reserve posting as the ledger has it, and whether it was given back (released or reversed).

    ``binding=False``: the binding digest is not checked (``binding_ok`` False), for a caller that gives
    money back, which needs no secret: only the ledger's figures decide how much, and to whom.
    """
    db = gateway.db
    amount = db.to_int(row["amount"])
    reserve = await db.fetch_one(
        "SELECT id, kind, merchant_id, memo FROM ledger_transactions WHERE reference = :r",
        {"r": f"payout:{row['id']}:reserve"})
    if reserve is None or reserve["kind"] != "payout_reserve":
        return None, False
    postings = await db.fetch_all(
        "SELECT account, coin, amount FROM ledger_postings WHERE transaction_id = :t", {"t": reserve["id"]})
    reservation = _reserved(reserve["merchant_id"], [(p["account"], p["coin"], db.to_int(p["amount"]))
                                                     for p in postings])
    if reservation is None:
        return Reservation(None, "", "", 0, False), False
    merchant_id, coin, chain, reserved = reservation
    bound = binding and binding_matches(
        binding_key(gateway), reserve["memo"], payout_id=row["id"], merchant_id=row["merchant_id"],
        coin=row["coin"], chain=row["chain"], amount=amount, destination=row["destination"])
    given_back = await db.fetch_val(
        "SELECT 1 FROM ledger_transactions WHERE reference = :r OR reverses = :t LIMIT 1",
        {"r": release_reference(row["id"]), "t": reserve["id"]})
    return Reservation(merchant_id, coin, chain, reserved, bound), bool(given_back)


def _reserved(merchant_id: str | None, postings: list[tuple[str, str, int]]) -> tuple[str, str, str, int] | None:
    """(merchant, coin, chain, amount) when the postings are exactly a payout reserve, else None.

    A reserve is two postings of one coin: ``-amount`` out of the merchant's available balance and
    ``+amount`` into one chain's payouts in flight.
    """
    if merchant_id is None or len(postings) != 2:
        return None
    (out_account, out_coin, out_amount), (in_account, in_coin, in_amount) = sorted(postings, key=lambda p: p[2])
    chain = in_account.split(":")[1] if in_account.count(":") == 2 else ""
    if (out_account != merchant_available(merchant_id) or not chain or in_account != payouts_in_flight(chain)
            or out_coin != in_coin or out_amount != -in_amount or in_amount <= 0):
        return None
    return merchant_id, in_coin, chain, in_amount
