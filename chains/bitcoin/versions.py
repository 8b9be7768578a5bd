"""The store of a payout's fee replacements (``bitcoin_payout_versions``): what ``replacing.py`` signed.

Version 0 is the transaction the payout was signed as (the core's
``tx_hash``); versions 1.. replace it by fee, each stored before it is
broadcast. They spend the same inputs, so one at most is ever mined; which
one decides the change the wallet gets back (``settle``): the change row
written at signing (``bitcoin_change_outputs``, keyed by the original txid)
is moved to the mined version's txid and amount, then made spendable with
the payout's other outputs by ``wallet.confirm_payout``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from .wallet import PENDING_CHANGE

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway


@dataclass(frozen=True)
class Version:
    original_tx_hash: str
    version: int
    tx_hash: str
    raw_tx: str
    fee: int
    change_amount: int
    signed_height: int
    accepted: bool = False
    block_hash: str | None = None


async def of(gateway: "Gateway", chain: str, original_tx_hash: str) -> list[Version]:
    """The payout's versions, oldest first; empty when it was never replaced."""
    db = gateway.db
    rows = await db.fetch_all(
        "SELECT * FROM bitcoin_payout_versions WHERE chain = :c AND original_tx_hash = :o ORDER BY version",
        {"c": chain, "o": original_tx_hash})
    return [Version(r["original_tx_hash"], int(r["version"]), r["tx_hash"], r["raw_tx"], db.to_int(r["fee"]),
                    db.to_int(r["change_amount"]), int(r["signed_height"]), bool(r["accepted"]), r["block_hash"])
            for r in rows]


async def latest_accepted(gateway: "Gateway", chain: str, original_tx_hash: str) -> Version | None:
    """The newest version a node took (what a re-broadcast should offer), or None."""
    accepted = [v for v in await of(gateway, chain, original_tx_hash) if v.accepted]
    return accepted[-1] if accepted else None


async def record(gateway: "Gateway", chain: str, new: Sequence[Version]) -> bool:
    """Store ``new`` (version 0 too, the first time) in one transaction; False when another bump won the race."""
    db = gateway.db
    now = gateway.now()
    try:
        async with db.transaction():
            for v in new:
                await db.execute(
                    "INSERT INTO bitcoin_payout_versions (chain, original_tx_hash, version, tx_hash, raw_tx, fee,"
                    " change_amount, signed_height, accepted, created_at) VALUES (:c, :o, :v, :h, :r, :f, :ca, :sh,"
                    " :a, :t)",
                    {"c": chain, "o": v.original_tx_hash, "v": v.version, "h": v.tx_hash, "r": v.raw_tx,
                     "f": db.amount_param(v.fee), "ca": db.amount_param(v.change_amount), "sh": v.signed_height,
                     "a": 1 if v.accepted else 0, "t": now})
    except Exception as exc:  # only a unique violation means a lost race
        text = str(exc).lower()
        if "unique" in text or "duplicate" in text:
            return False
        raise
    return True


async def mark_accepted(gateway: "Gateway", chain: str, tx_hash: str) -> None:
    await gateway.db.execute("UPDATE bitcoin_payout_versions SET accepted = 1 WHERE chain = :c AND tx_hash = :h",
                             {"c": chain, "h": tx_hash})


async def forget_refused(gateway: "Gateway", chain: str, refused: Version) -> None:
    """A version no node ever took: its bytes never left us, so it can never be mined. Version 0 alone left
    (the first replacement refused) is forgotten too: the payout is then one transaction again."""
    values = {"c": chain, "h": refused.tx_hash, "o": refused.original_tx_hash}
    async with gateway.db.transaction():
        await gateway.db.execute(
            "DELETE FROM bitcoin_payout_versions WHERE chain = :c AND tx_hash = :h AND accepted = 0 AND version > 0",
            values)
        await gateway.db.execute(
            "DELETE FROM bitcoin_payout_versions WHERE chain = :c AND original_tx_hash = :o AND version = 0"
            " AND NOT EXISTS (SELECT 1 FROM bitcoin_payout_versions v WHERE v.chain = :c"
            " AND v.original_tx_hash = :o AND v.version > 0)", values)


async def remember_block(gateway: "Gateway", chain: str, version: Version, block_hash: str | None) -> None:
    if block_hash != version.block_hash:
        await gateway.db.execute(
            "UPDATE bitcoin_payout_versions SET block_hash = :b WHERE chain = :c AND tx_hash = :h",
            {"b": block_hash, "c": chain, "h": version.tx_hash})


async def settle(gateway: "Gateway", chain: str, owner: str, known: Sequence[Version], mined: Version,
                 change_index: int | None) -> None:
    """``mined`` is in a block: the payout's change is that version's output (txid and amount)."""
    if change_index is None:
        return
    db = gateway.db
    hashes = [v.tx_hash for v in known]
    marks = ", ".join(f":h{i}" for i in range(len(hashes)))
    await db.execute(
        f"UPDATE bitcoin_change_outputs SET tx_hash = :mined, amount = :a WHERE chain = :c AND payout_id = :p"
        f" AND output_index = :i AND status = :pending AND tx_hash IN ({marks})",
        {"mined": mined.tx_hash, "a": db.amount_param(mined.change_amount), "c": chain, "p": owner,
         "i": change_index, "pending": PENDING_CHANGE, **{f"h{i}": h for i, h in enumerate(hashes)}})
