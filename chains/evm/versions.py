"""The signed versions of one transaction: the first, then each re-signing at the same nonce (``evm_tx_versions``).

A stuck transaction is re-signed with higher fees (``bumping.py``); all
versions share one nonce, so at most one is ever mined, but until then any
of them may be. So every version is kept, stored before it is broadcast,
and whoever asks where a transaction stands asks about all of them. Version
0 is the ``evm_txs`` row itself; re-signings are numbered from 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hexbytes import HexBytes

from .eth_account_import import TypedTransaction

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway
    from .signer import StoredTx


@dataclass(frozen=True)
class Version:
    """One signing of a stored transaction."""

    number: int
    tx_hash: str
    raw: str
    max_fee_per_gas: int
    max_priority_fee_per_gas: int
    signed_height: int | None  # the tip when it was signed; None for a first version signed before it was kept


def signed_tip(raw: str) -> int:
    """The ``maxPriorityFeePerGas`` signed into type-2 bytes."""
    return int(TypedTransaction.from_bytes(HexBytes(raw)).as_dict()["maxPriorityFeePerGas"])


def signed_fields(raw: str) -> dict:
    """What the type-2 bytes carry (to, value, data, gas, nonce, chainId ...): the source of a re-signing."""
    return dict(TypedTransaction.from_bytes(HexBytes(raw)).as_dict())


async def versions_of(gateway: "Gateway", stored: "StoredTx") -> list[Version]:
    """Every version of ``stored``, oldest first; the last is the one to broadcast."""
    to_int = gateway.db.to_int
    rows = await gateway.db.fetch_all(
        "SELECT * FROM evm_tx_versions WHERE tx_id = :id ORDER BY version", {"id": stored.id})
    first = Version(0, stored.tx_hash, stored.raw, stored.max_fee_per_gas, signed_tip(stored.raw),
                    stored.signed_height)
    return [first, *(Version(int(r["version"]), r["tx_hash"], r["raw"], to_int(r["max_fee_per_gas"]),
                             to_int(r["max_priority_fee_per_gas"]), int(r["signed_height"])) for r in rows)]


async def owner_id(gateway: "Gateway", chain: str, tx_hash: str) -> str | None:
    """The ``evm_txs`` id whose re-signed version ``tx_hash`` is, or None."""
    found = await gateway.db.fetch_val("SELECT tx_id FROM evm_tx_versions WHERE chain = :c AND tx_hash = :h",
                                       {"c": chain, "h": tx_hash})
    return None if found is None else str(found)


async def insert(gateway: "Gateway", chain: str, stored: "StoredTx", version: Version) -> bool:
    """Inside the caller's transaction: store ``version`` of ``stored``; False when a twin took that number."""
    db = gateway.db
    row = {"tx_id": stored.id, "version": version.number, "chain": chain, "tx_hash": version.tx_hash,
           "raw": version.raw, "max_fee_per_gas": db.amount_param(version.max_fee_per_gas),
           "max_priority_fee_per_gas": db.amount_param(version.max_priority_fee_per_gas),
           "signed_height": version.signed_height, "created_at": gateway.now()}
    inserted = await db.fetch_one(
        f"INSERT INTO evm_tx_versions ({', '.join(row)}) VALUES ({', '.join(':' + k for k in row)})"
        " ON CONFLICT (tx_id, version) DO NOTHING RETURNING tx_id", row)
    return inserted is not None


async def forget_unsent(gateway: "Gateway", chain: str, tx_hash: str) -> None:
    """Drop a re-signed version no node ever accepted (refused for good): it can never be mined."""
    await gateway.db.execute("DELETE FROM evm_tx_versions WHERE chain = :c AND tx_hash = :h",
                             {"c": chain, "h": tx_hash})
