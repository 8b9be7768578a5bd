"""The store of closing transactions (``bitcoin_payout_conflicts``): what ``closing.py`` signed and its fate.

One row per dropped payout, written before the transaction is broadcast.
Settling (the closing transaction is deep enough) is one database
transaction: the payout's inputs become spent, the closing output becomes
spendable change, and the original's change that will never exist is
forgotten.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .wallet import AVAILABLE_CHANGE, PENDING_CHANGE, SPENT

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

CLOSING_OUTPUT = 0  # the closing transaction has one output, ours


@dataclass(frozen=True)
class Conflict:
    """A signed transaction spending a dropped payout's inputs back to the hot wallet."""

    payout_id: str
    tx_hash: str
    raw_tx: str
    fee: int
    change_amount: int
    change_key_index: int
    signed_height: int
    block_hash: str | None = None


async def find(gateway: "Gateway", chain: str, payout_id: str) -> Conflict | None:
    row = await gateway.db.fetch_one(
        "SELECT * FROM bitcoin_payout_conflicts WHERE chain = :c AND payout_id = :p", {"c": chain, "p": payout_id})
    if row is None:
        return None
    to_int = gateway.db.to_int
    return Conflict(row["payout_id"], row["tx_hash"], row["raw_tx"], to_int(row["fee"]), to_int(row["change_amount"]),
                    int(row["change_key_index"]), int(row["signed_height"]), row["block_hash"])


async def record(gateway: "Gateway", chain: str, conflict: Conflict) -> Conflict:
    """Store ``conflict`` unless one is stored for the payout already; returns the stored one (broadcast that)."""
    db = gateway.db
    await db.execute(
        "INSERT INTO bitcoin_payout_conflicts (chain, payout_id, tx_hash, raw_tx, fee, change_amount,"
        " change_key_index, signed_height, created_at) VALUES (:c, :p, :h, :r, :f, :a, :k, :sh, :t)"
        " ON CONFLICT DO NOTHING",
        {"c": chain, "p": conflict.payout_id, "h": conflict.tx_hash, "r": conflict.raw_tx,
         "f": db.amount_param(conflict.fee), "a": db.amount_param(conflict.change_amount),
         "k": conflict.change_key_index, "sh": conflict.signed_height, "t": gateway.now()})
    stored = await find(gateway, chain, conflict.payout_id)
    assert stored is not None, "inserted or already there"
    return stored


async def remember_block(gateway: "Gateway", chain: str, conflict: Conflict, block_hash: str | None) -> None:
    if block_hash != conflict.block_hash:
        await gateway.db.execute(
            "UPDATE bitcoin_payout_conflicts SET block_hash = :b WHERE chain = :c AND payout_id = :p",
            {"b": block_hash, "c": chain, "p": conflict.payout_id})


async def settle(gateway: "Gateway", chain: str, conflict: Conflict, original_tx_hash: str) -> None:
    """The closing transaction is deep enough: its inputs are spent, its output is ours. Idempotent."""
    db = gateway.db
    values = {"c": chain, "p": conflict.payout_id}
    async with db.transaction():
        await db.execute("UPDATE bitcoin_wallet_spends SET state = :s WHERE chain = :c AND payout_id = :p",
                         {**values, "s": SPENT})
        await db.execute(
            "DELETE FROM bitcoin_change_outputs WHERE chain = :c AND payout_id = :p AND tx_hash = :h AND status = :s",
            {**values, "h": original_tx_hash, "s": PENDING_CHANGE})
        await db.execute(
            "INSERT INTO bitcoin_change_outputs (chain, tx_hash, output_index, amount, key_index, payout_id, status,"
            " created_at) VALUES (:c, :h, :i, :a, :k, :p, :s, :t) ON CONFLICT DO NOTHING",
            {**values, "h": conflict.tx_hash, "i": CLOSING_OUTPUT, "a": db.amount_param(conflict.change_amount),
             "k": conflict.change_key_index, "s": AVAILABLE_CHANGE, "t": gateway.now()})
