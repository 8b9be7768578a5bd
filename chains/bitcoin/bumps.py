"""The store of bump children (``bitcoin_payout_bumps``): what ``bumping.py`` signed for a stuck payout.

The child spends the payout's change; in the hot wallet's books that
spend and the child's own output belong to ``owner(payout_id)``, not to the
payout, so the payout's confirmation alone never makes them final: the
child's confirmation does (``wallet.confirm_payout(owner)``), and a child
that vanished gives the change back (``wallet.release_payout(owner)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

BUMP_OUTPUT = 0  # the child has one output, ours


def owner(payout_id: str) -> str:
    """The ``payout_id`` under which the wallet books the child's spend and output."""
    return f"{payout_id}:bump"


@dataclass(frozen=True)
class Bump:
    payout_id: str
    tx_hash: str
    raw_tx: str
    parent_tx_hash: str
    parent_fee: int
    fee: int
    signed_height: int
    block_hash: str | None = None


async def find(gateway: "Gateway", chain: str, payout_id: str) -> Bump | None:
    row = await gateway.db.fetch_one(
        "SELECT * FROM bitcoin_payout_bumps WHERE chain = :c AND payout_id = :p", {"c": chain, "p": payout_id})
    if row is None:
        return None
    to_int = gateway.db.to_int
    return Bump(row["payout_id"], row["tx_hash"], row["raw_tx"], row["parent_tx_hash"], to_int(row["parent_fee"]),
                to_int(row["fee"]), int(row["signed_height"]), row["block_hash"])


async def record(gateway: "Gateway", chain: str, bump: Bump, spent: tuple[str, int], change_amount: int,
                 change_key_index: int) -> Bump | None:
    """Store the child, reserve the change it spends and remember its output, in one transaction.

    Returns None when the change was reserved already (another bump won the race).
    """
    db = gateway.db
    now = gateway.now()
    values = {"c": chain, "p": owner(bump.payout_id), "t": now}
    try:
        async with db.transaction():
            await db.execute(
                "INSERT INTO bitcoin_wallet_spends (chain, tx_hash, output_index, payout_id, state, created_at)"
                " VALUES (:c, :h, :i, :p, 'reserved', :t)", {**values, "h": spent[0], "i": spent[1]})
            await db.execute(
                "INSERT INTO bitcoin_change_outputs (chain, tx_hash, output_index, amount, key_index, payout_id,"
                " status, created_at) VALUES (:c, :h, :i, :a, :k, :p, 'pending', :t)",
                {**values, "h": bump.tx_hash, "i": BUMP_OUTPUT, "a": db.amount_param(change_amount),
                 "k": change_key_index})
            await db.execute(
                "INSERT INTO bitcoin_payout_bumps (chain, payout_id, tx_hash, raw_tx, parent_tx_hash, parent_fee, fee,"
                " signed_height, created_at) VALUES (:c, :pid, :h, :r, :ph, :pf, :f, :sh, :t)",
                {**values, "pid": bump.payout_id, "h": bump.tx_hash, "r": bump.raw_tx, "ph": bump.parent_tx_hash,
                 "pf": db.amount_param(bump.parent_fee), "f": db.amount_param(bump.fee), "sh": bump.signed_height})
    except Exception as exc:  # only a unique violation means a lost race
        text = str(exc).lower()
        if "unique" in text or "duplicate" in text:
            return None
        raise
    return await find(gateway, chain, bump.payout_id)


async def remember_block(gateway: "Gateway", chain: str, bump: Bump, block_hash: str | None) -> None:
    if block_hash != bump.block_hash:
        await gateway.db.execute("UPDATE bitcoin_payout_bumps SET block_hash = :b WHERE chain = :c AND payout_id = :p",
                                 {"b": block_hash, "c": chain, "p": bump.payout_id})
