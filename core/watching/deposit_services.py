"""Core services for deposits: observed deposits and the credited outputs and addresses behind them.

Why its own module: chain plugins that spend what the gateway received (a UTXO hot wallet, a
sweep) and feature plugins that show deposits read them here, not from the deposits table.

Records, never rows: plugins reach these through ``orbchain.api`` (docs/plugins.md, "Core services").
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .deposits import CREDITED
from ..contract.gateway import PluginGateway as Gateway


class DepositRecord(NamedTuple):
    """One observed deposit. ``status`` is PENDING, CONFIRMED, CREDITED or FAILED;
    ``amount_usd`` is the decimal text valued when seen ("0" when unknown);
    times are Unix seconds, ``credited_at`` None until credited."""

    id: str
    merchant_id: str
    chain: str
    coin: str
    address: str
    tx_hash: str
    output_index: int
    amount: int
    amount_usd: str
    status: str
    confirmations: int
    track_id: str | None
    created_at: int
    credited_at: int | None


class CreditedOutput(NamedTuple):
    """A credited deposit output the gateway holds the key of (a UTXO chain's hot wallet).

    ``key_account`` and ``key_index`` locate its key in the operator's seed
    (the merchant's HD account, the address's index).
    """

    tx_hash: str
    output_index: int
    address: str
    coin: str
    amount: int
    key_account: int
    key_index: int


class CreditedAddress(NamedTuple):
    """A deposit address with credited deposits of ``coin``; ``last_credited_at`` is the newest credit's time."""

    address: str
    coin: str
    last_credited_at: int


def _int_or_none(gateway: "Gateway", value: object) -> int | None:
    return None if value is None else gateway.db.to_int(value)


async def recent_deposits(gateway: "Gateway", merchant_id: str, limit: int) -> list[DepositRecord]:
    """The merchant's newest ``limit`` deposits, newest first."""
    rows = await gateway.db.fetch_all(
        "SELECT * FROM deposits WHERE merchant_id = :m ORDER BY created_at DESC, id DESC LIMIT :l",
        {"m": merchant_id, "l": limit})
    return [_deposit_record(gateway, r) for r in rows]


async def find_deposit(gateway: "Gateway", deposit_id: str) -> DepositRecord | None:
    """One deposit by id (any merchant's: check ``merchant_id`` where it matters), or None."""
    row = await gateway.db.fetch_one("SELECT * FROM deposits WHERE id = :id", {"id": deposit_id})
    return None if row is None else _deposit_record(gateway, row)


def _deposit_record(gateway: "Gateway", r: Any) -> DepositRecord:
    return DepositRecord(r["id"], r["merchant_id"], r["chain"], r["coin"], r["address"], r["tx_hash"],
                         int(r["output_index"]), gateway.db.to_int(r["amount"]), r["amount_usd"] or "0", r["status"],
                         int(r["confirmations"]), r["track_id"], int(r["created_at"]),
                         _int_or_none(gateway, r["credited_at"]))


async def credited_outputs(gateway: "Gateway", chain: str, network: str) -> list[CreditedOutput]:
    """Every credited deposit output on ``chain`` to an address derived for ``network``.

    Spent or not: what the gateway spent is the plugin's own record, so the
    plugin subtracts it. A reorg that un-credits a deposit removes it here.
    """
    rows = await gateway.db.fetch_all(
        "SELECT d.tx_hash, d.output_index, d.address, d.coin, d.amount, a.key_index, m.key_account FROM deposits d"
        " JOIN deposit_addresses a ON a.address = d.address"
        " JOIN merchants m ON m.id = a.merchant_id"
        " WHERE d.chain = :c AND d.status = :credited AND a.network = :n",
        {"c": chain, "credited": CREDITED, "n": network})
    return [CreditedOutput(r["tx_hash"], int(r["output_index"]), r["address"], r["coin"],
                           gateway.db.to_int(r["amount"]), int(r["key_account"]), int(r["key_index"]))
            for r in rows]


async def credited_addresses(gateway: "Gateway", chain: str) -> list[CreditedAddress]:
    """Each (address, coin) on ``chain`` with credited deposits, ordered by address then coin."""
    rows = await gateway.db.fetch_all(
        "SELECT address, coin, MAX(credited_at) AS last_credited_at FROM deposits"
        " WHERE chain = :c AND status = :credited GROUP BY address, coin ORDER BY address, coin",
        {"c": chain, "credited": CREDITED})
    return [CreditedAddress(r["address"], r["coin"], int(r["last_credited_at"] or 0)) for r in rows]
