"""The tolerance table: one row per merchant with a percentage, one per coin with an absolute amount."""

from __future__ import annotations

from typing import Any, Mapping


async def tolerance_of(gateway: Any, merchant_id: str, coin: str) -> tuple[int, int] | None:
    """(percent in basis points, absolute base units of ``coin``), or None when the merchant set none."""
    db = gateway.db
    row = await db.fetch_one(
        "SELECT t.percent_bp, c.absolute FROM payment_tolerance t LEFT JOIN payment_tolerance_coins c"
        " ON c.merchant_id = t.merchant_id AND c.coin = :c WHERE t.merchant_id = :m", {"m": merchant_id, "c": coin})
    if row is None:
        return None
    return int(row["percent_bp"]), db.to_int(row["absolute"]) if row["absolute"] is not None else 0


async def settings_of(gateway: Any, merchant_id: str) -> tuple[int, dict[str, int]]:
    db = gateway.db
    percent = await db.fetch_val("SELECT percent_bp FROM payment_tolerance WHERE merchant_id = :m",
                                 {"m": merchant_id})
    rows = await db.fetch_all("SELECT coin, absolute FROM payment_tolerance_coins WHERE merchant_id = :m",
                              {"m": merchant_id})
    return int(percent or 0), {r["coin"]: db.to_int(r["absolute"]) for r in rows}


async def replace(gateway: Any, merchant_id: str, percent_bp: int, absolute: Mapping[str, int]) -> None:
    """The merchant's whole tolerance in one transaction; all zero removes it."""
    db = gateway.db
    async with db.transaction():
        await db.execute("DELETE FROM payment_tolerance_coins WHERE merchant_id = :m", {"m": merchant_id})
        await db.execute("DELETE FROM payment_tolerance WHERE merchant_id = :m", {"m": merchant_id})
        kept = {coin: units for coin, units in absolute.items() if units > 0}
        if not percent_bp and not kept:
            return
        await db.execute("INSERT INTO payment_tolerance (merchant_id, percent_bp, updated_at) VALUES (:m, :p, :now)",
                         {"m": merchant_id, "p": percent_bp, "now": gateway.now()})
        if kept:
            await db.execute_many(
                "INSERT INTO payment_tolerance_coins (merchant_id, coin, absolute) VALUES (:m, :c, :a)",
                [{"m": merchant_id, "c": coin, "a": db.amount_param(units)} for coin, units in kept.items()])
