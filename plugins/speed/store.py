"""The speed_tiers table: per merchant and coin, (up_to base units, confirmations) rows."""

from __future__ import annotations

from typing import Any, Mapping, Sequence


async def tiers_of(gateway: Any, merchant_id: str, coin: str) -> list[tuple[int, int]]:
    db = gateway.db
    rows = await db.fetch_all("SELECT up_to, confirmations FROM speed_tiers WHERE merchant_id = :m AND coin = :c",
                              {"m": merchant_id, "c": coin})
    return sorted((db.to_int(r["up_to"]), int(r["confirmations"])) for r in rows)


async def all_tiers(gateway: Any, merchant_id: str) -> dict[str, list[tuple[int, int]]]:
    db = gateway.db
    rows = await db.fetch_all("SELECT coin, up_to, confirmations FROM speed_tiers WHERE merchant_id = :m",
                              {"m": merchant_id})
    tiers: dict[str, list[tuple[int, int]]] = {}
    for r in rows:
        tiers.setdefault(r["coin"], []).append((db.to_int(r["up_to"]), int(r["confirmations"])))
    return {coin: sorted(rows) for coin, rows in tiers.items()}


async def replace(gateway: Any, merchant_id: str, tiers: Mapping[str, Sequence[tuple[int, int]]]) -> None:
    """The merchant's whole policy in one transaction; no tiers removes it."""
    db = gateway.db
    async with db.transaction():
        await db.execute("DELETE FROM speed_tiers WHERE merchant_id = :m", {"m": merchant_id})
        rows = [{"m": merchant_id, "c": coin, "u": db.amount_param(up_to), "n": confirmations}
                for coin, coin_tiers in tiers.items() for up_to, confirmations in coin_tiers]
        if rows:
            await db.execute_many(
                "INSERT INTO speed_tiers (merchant_id, coin, up_to, confirmations) VALUES (:m, :c, :u, :n)", rows)
