"""The ``filter_credit_postings`` hook: a split payment's net goes to its recipients, in the credit itself.

The core proposes world -> merchant net + platform fee; the fee is charged
once, on the whole deposit, and stays as the core computed it. The
merchant's net posting is replaced by one posting per non-zero share
(``arithmetic.distribute``): a merchant recipient's available balance, or,
for an address recipient, this plugin's ``splits:payouts:<merchant>``
account, where the share waits (unspendable by anyone) until the release
step turns it into a payout of the payment's merchant through the payout
pipeline. The rows naming those payouts are written in the same
transaction, so a credit and its owed payouts commit or roll back together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...api import ledger
from .arithmetic import distribute
from .entries import entries_of

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway
    from ...api import Credit

PENDING = "pending"
REQUESTED = "requested"
FAILED = "failed"
REVERSED = "reversed"


def payouts_account(merchant_id: str) -> str:
    """Address shares of ``merchant_id``'s split payments waiting for their payout (never spendable)."""
    if not merchant_id or ":" in merchant_id:
        raise ValueError(f"bad merchant id {merchant_id!r}")
    return f"splits:payouts:{merchant_id}"


async def split_postings(gateway: "Gateway", credit: "Credit",
                         postings: list[ledger.Posting]) -> list[ledger.Posting] | None:
    """The postings with the merchant's net cut into its payment's splits (None: no splits)."""
    if not credit.track_id:
        return None
    entries = await entries_of(gateway, credit.track_id)
    if not entries:
        return None
    owner = ledger.merchant_available(credit.merchant_id)
    nets = [i for i, p in enumerate(postings) if p.account == owner]
    if not nets:
        if credit.amount - credit.fee == 0:
            return None  # the fee took everything: nothing to split
        # Another plugin moved the net elsewhere: crediting it unsplit would pay the wrong people.
        raise RuntimeError(f"splits: credit {credit.reference} has no net posting to {owner} to split")
    if len(nets) > 1:
        raise RuntimeError(f"splits: credit {credit.reference} has {len(nets)} net postings to {owner}")
    net = postings[nets[0]].amount
    shaped = [p for i, p in enumerate(postings) if i != nets[0]]
    owed: list[dict[str, Any]] = []
    for entry, share in zip(entries, distribute(net, [int(e["bps"]) for e in entries])):
        if share == 0:
            continue
        if entry["recipient_merchant_id"]:
            shaped.append(ledger.Posting(ledger.merchant_available(entry["recipient_merchant_id"]), credit.coin, share))
            continue
        shaped.append(ledger.Posting(payouts_account(credit.merchant_id), credit.coin, share))
        owed.append({"d": credit.deposit.id, "p": int(entry["position"]), "t": credit.track_id,
                     "m": credit.merchant_id, "c": credit.coin, "a": entry["recipient_address"],
                     "amt": gateway.db.amount_param(share), "s": PENDING, "now": gateway.now(), "rev": REVERSED})
    if owed:
        await _owe(gateway, owed)
    return shaped


async def _owe(gateway: "Gateway", rows: list[dict[str, Any]]) -> None:
    """Record the address shares to pay out; a credit again after a reorg revives a reversed row.

    A row already requested stays as it is: that payout went out once, and
    this credit refills the account the reversal drove below zero. A revived
    row takes this credit's share (the fee rate may have changed meanwhile).
    """
    await gateway.db.execute_many(
        "INSERT INTO splits_payouts (deposit_id, position, track_id, merchant_id, coin, address, amount, status,"
        " created_at, updated_at) VALUES (:d, :p, :t, :m, :c, :a, :amt, :s, :now, :now)"
        " ON CONFLICT (deposit_id, position) DO UPDATE SET status = :s, amount = :amt, updated_at = :now"
        " WHERE splits_payouts.status = :rev", rows)
