"""The plugin's own tables (swap rows, locked settle quotes) and the account's default settlement coin.

Every status change is a conditional update (``WHERE status = :expected``)
returning the row, so two workers, or a worker and a retry after a crash,
can never both move a swap: the loser gets None and does nothing.
"""

from __future__ import annotations

import secrets
import time
from typing import TYPE_CHECKING, Any, Mapping

from ...api import (
    KeptList, default_settlement_coin, delete_rows_naming, insert_statement, set_default_settlement_coin,
)

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

Row = Mapping[str, Any]

QUOTED, PENDING, CONFIRMED, FAILED = "QUOTED", "PENDING", "CONFIRMED", "FAILED"
OPEN = (QUOTED, PENDING)
BALANCE, SETTLE, SWAPIN, VENUEIN = "balance", "settle", "swapin", "venuein"
CREDITING = (SETTLE, SWAPIN)  # kinds that hold a deposit CONFIRMED until the conversion is final
VENUEIN_CREDITED_LOOKS = 20  # a credited deposit-venue order is asked this often at most for its payout hash
AMOUNT_COLUMNS = ("from_amount", "to_amount_quoted", "actual_to_amount", "fee_amount", "settled_amount")
KEPT = KeptList("swaps")  # m0004: the list's total per merchant, kept by the database (it has no filter)


def new_swap_id() -> str:
    """Sortable by creation, then random: the id the venue sees, so it must never repeat."""
    return f"swp_{time.time_ns():016x}{secrets.token_hex(6)}"


def _clean(gateway: "Gateway", row: Row | None) -> dict[str, Any] | None:
    if row is None:
        return None
    out = dict(row)
    for name in AMOUNT_COLUMNS:
        if out.get(name) is not None:
            out[name] = gateway.db.to_int(out[name])
    for name in ("floating", "funded", "fallback", "credit_done"):
        if out.get(name) is not None:
            out[name] = bool(out[name])
    return out


async def insert_swap(gateway: "Gateway", row: Mapping[str, Any]) -> dict[str, Any] | None:
    """Insert a new swap; None when (merchant, idempotency_key) or deposit_id already has one."""
    db = gateway.db
    values = {**row}
    for name in AMOUNT_COLUMNS:
        if values.get(name) is not None:
            values[name] = db.amount_param(values[name])
    inserted = await db.fetch_one(insert_statement("swaps", values) + " ON CONFLICT DO NOTHING RETURNING *",
                                  values)
    return _clean(gateway, inserted)


async def get(gateway: "Gateway", swap_id: str) -> dict[str, Any] | None:
    return _clean(gateway, await gateway.db.fetch_one("SELECT * FROM swaps WHERE id = :id", {"id": swap_id}))


async def by_key(gateway: "Gateway", merchant_id: str, key: str) -> dict[str, Any] | None:
    return _clean(gateway, await gateway.db.fetch_one(
        "SELECT * FROM swaps WHERE merchant_id = :m AND idempotency_key = :k", {"m": merchant_id, "k": key}))


async def by_track_id(gateway: "Gateway", track_id: str) -> list[dict[str, Any]]:
    rows = await gateway.db.fetch_all("SELECT * FROM swaps WHERE track_id = :t ORDER BY created_at, id",
                                      {"t": track_id})
    return [r for r in (_clean(gateway, row) for row in rows) if r is not None]


async def move(gateway: "Gateway", swap_id: str, expected: str | tuple[str, ...],
               **changes: Any) -> dict[str, Any] | None:
    """Apply ``changes`` if the swap is still in ``expected``; the new row, or None when it moved on."""
    db = gateway.db
    states = (expected,) if isinstance(expected, str) else expected
    values: dict[str, Any] = {"id": swap_id, "now": gateway.now()}
    sets = ["updated_at = :now"]
    for name, value in changes.items():
        sets.append(f"{name} = :{name}")
        values[name] = db.amount_param(value) if name in AMOUNT_COLUMNS and value is not None else value
    names = ", ".join(f":s{i}" for i in range(len(states)))
    values.update({f"s{i}": s for i, s in enumerate(states)})
    row = await db.fetch_one(
        f"UPDATE swaps SET {', '.join(sets)} WHERE id = :id AND status IN ({names}) RETURNING *", values)
    return _clean(gateway, row)


async def by_deposit(gateway: "Gateway", deposit_id: str) -> list[dict[str, Any]]:
    rows = await gateway.db.fetch_all("SELECT * FROM swaps WHERE deposit_id = :d ORDER BY created_at, id",
                                    {"d": deposit_id})
    return [r for r in (_clean(gateway, row) for row in rows) if r is not None]


async def swapins_to_retry(gateway: "Gateway", limit: int = 100) -> list[str]:
    """Deposits whose every swap-in attempt FAILED: the XMR is held and waits for the next attempt."""
    rows = await gateway.db.fetch_all(
        "SELECT deposit_id FROM swaps WHERE kind = :k GROUP BY deposit_id"
        " HAVING SUM(CASE WHEN status = :f THEN 0 ELSE 1 END) = 0 ORDER BY MAX(updated_at) LIMIT :l",
        {"k": SWAPIN, "f": FAILED, "l": limit})
    return [r["deposit_id"] for r in rows]


async def due(gateway: "Gateway", limit: int = 100) -> list[dict[str, Any]]:
    """Open swaps whose next step is due, and finished auto-settle swaps whose credit is not completed yet."""
    rows = await gateway.db.fetch_all(
        "SELECT * FROM swaps WHERE (status IN (:q, :p) AND next_attempt_at <= :now AND kind <> :vin)"
        " OR (kind IN (:settle, :swapin) AND status IN (:c, :f) AND credit_done = :no)"
        " ORDER BY next_attempt_at, id LIMIT :limit",
        {"q": QUOTED, "p": PENDING, "c": CONFIRMED, "f": FAILED, "settle": SETTLE, "swapin": SWAPIN, "no": False,
         "vin": VENUEIN, "now": gateway.now(), "limit": limit})
    return [r for r in (_clean(gateway, row) for row in rows) if r is not None]


async def venuein_due(gateway: "Gateway", limit: int = 100) -> list[dict[str, Any]]:
    """Deposit-venue orders due a look: open, or credited (a few more looks) until the venue names the payout."""
    rows = await gateway.db.fetch_all(
        "SELECT * FROM swaps WHERE kind = :k AND payout_hash IS NULL AND next_attempt_at <= :now"
        " AND (status = :p OR (status = :c AND attempts < :most)) ORDER BY next_attempt_at, id LIMIT :limit",
        {"k": VENUEIN, "p": PENDING, "c": CONFIRMED, "most": VENUEIN_CREDITED_LOOKS, "now": gateway.now(),
         "limit": limit})
    return [r for r in (_clean(gateway, row) for row in rows) if r is not None]


async def venuein_by_payout(gateway: "Gateway", merchant_id: str, coin: str,
                            address: str) -> dict[str, Any] | None:
    """The deposit-venue order paying out ``coin`` to ``address`` of the merchant (newest first)."""
    return _clean(gateway, await gateway.db.fetch_one(
        "SELECT * FROM swaps WHERE kind = :k AND merchant_id = :m AND to_coin = :c AND payout_address = :a"
        " ORDER BY created_at DESC, id DESC LIMIT 1", {"k": VENUEIN, "m": merchant_id, "c": coin, "a": address}))


async def list_for(gateway: "Gateway", merchant_id: str, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The merchant's swaps, newest first, and their exact total (kept by the database: m0004)."""
    db = gateway.db
    rows = await db.fetch_all(
        "SELECT * FROM swaps WHERE merchant_id = :m ORDER BY created_at DESC, id DESC LIMIT :l OFFSET :o",
        {"m": merchant_id, "l": limit, "o": offset})
    total = await KEPT.total(db, merchant_id)
    return [r for r in (_clean(gateway, row) for row in rows) if r is not None], int(total)


# -- auto-settle ----------------------------------------------------------------------------


async def lock_quote(gateway: "Gateway", *, track_id: str, merchant_id: str, venue: str, from_coin: str,
                     to_coin: str, from_amount: int, to_amount: int) -> None:
    db = gateway.db
    await db.execute(
        "INSERT INTO settle_quotes (track_id, merchant_id, venue, from_coin, to_coin, from_amount, to_amount,"
        " created_at) VALUES (:t, :m, :v, :fc, :tc, :fa, :ta, :now) ON CONFLICT DO NOTHING",
        {"t": track_id, "m": merchant_id, "v": venue, "fc": from_coin, "tc": to_coin,
         "fa": db.amount_param(from_amount), "ta": db.amount_param(to_amount), "now": gateway.now()})


async def locked_quote(gateway: "Gateway", track_id: str) -> dict[str, Any] | None:
    row = await gateway.db.fetch_one("SELECT * FROM settle_quotes WHERE track_id = :t", {"t": track_id})
    if row is None:
        return None
    to_int = gateway.db.to_int
    return {**row, "from_amount": to_int(row["from_amount"]), "to_amount": to_int(row["to_amount"])}


async def default_coin(gateway: "Gateway", merchant_id: str) -> str | None:
    """The account's default settlement coin: the core account field (SPEC 2.7) this plugin decides with."""
    return await default_settlement_coin(gateway, merchant_id)


async def set_default_coin(gateway: "Gateway", merchant_id: str, coin: str | None) -> None:
    await set_default_settlement_coin(gateway, merchant_id, coin)


async def forget_payments(gateway: "Gateway", track_ids: list[str]) -> None:
    """The ``payments_pruning`` hook: the core deletes these unpaid payments (no deposit ever), so their
    locked settle quotes go, and so do their deposit-venue orders the venue never saw money for (no
    ``payin_hash``, never credited). An order with a pay-in stays: it is the record of money in flight,
    which the job still drives to an outcome. Idempotent, and a no-op for ids not ours."""
    await delete_rows_naming(gateway, "settle_quotes", "track_id", track_ids)
    names = {f"t{i}": track_id for i, track_id in enumerate(track_ids)}
    if names:
        await gateway.db.execute(
            f"DELETE FROM swaps WHERE track_id IN ({', '.join(':' + k for k in names)}) AND kind = :kind"
            " AND payin_hash IS NULL AND deposit_id IS NULL AND status <> :credited",
            {**names, "kind": VENUEIN, "credited": CONFIRMED})
