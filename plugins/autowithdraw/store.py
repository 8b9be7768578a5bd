"""The rules and the per-(merchant, coin) cooldown state of auto-withdraw."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

Row = Mapping[str, Any]


async def rules_of(gateway: "Gateway", merchant_id: str) -> list[Row]:
    return await gateway.db.fetch_all(
        "SELECT r.merchant_id, r.coin, r.threshold, r.destination, s.last_fired_at, s.last_error"
        " FROM autowithdraw_rules r LEFT JOIN autowithdraw_state s"
        " ON s.merchant_id = r.merchant_id AND s.coin = r.coin WHERE r.merchant_id = :m ORDER BY r.position",
        {"m": merchant_id})


async def replace(gateway: "Gateway", merchant_id: str, rules: Sequence[tuple[str, int, str]]) -> None:
    """Swap the merchant's rules for ``rules`` (coin, threshold units, destination) in one transaction."""
    db = gateway.db
    async with db.transaction():
        await db.execute("DELETE FROM autowithdraw_rules WHERE merchant_id = :m", {"m": merchant_id})
        if rules:
            await db.execute_many(
                "INSERT INTO autowithdraw_rules (merchant_id, coin, threshold, destination, position)"
                " VALUES (:m, :c, :t, :d, :p)",
                [{"m": merchant_id, "c": coin, "t": db.amount_param(threshold), "d": destination, "p": i}
                 for i, (coin, threshold, destination) in enumerate(rules)])


async def all_rules(gateway: "Gateway", after: tuple[str, str], limit: int) -> list[Row]:
    """Every rule in key order after ``after`` (keyset paging for the job)."""
    return await gateway.db.fetch_all(
        "SELECT r.merchant_id, r.coin, r.threshold, r.destination, s.last_fired_at"
        " FROM autowithdraw_rules r LEFT JOIN autowithdraw_state s"
        " ON s.merchant_id = r.merchant_id AND s.coin = r.coin"
        " WHERE r.merchant_id > :m OR (r.merchant_id = :m AND r.coin > :c)"
        " ORDER BY r.merchant_id, r.coin LIMIT :l", {"m": after[0], "c": after[1], "l": limit})


async def claim(gateway: "Gateway", merchant_id: str, coin: str, *, now: int, cooldown: int) -> bool:
    """Start the cooldown unless one is running: True for the single caller that may fire now.

    Committed before the payout is requested, so a concurrent check or a
    restarted process sees the cooldown and does not fire again.
    """
    fired = await gateway.db.fetch_val(
        "INSERT INTO autowithdraw_state (merchant_id, coin, last_fired_at) VALUES (:m, :c, :now)"
        " ON CONFLICT (merchant_id, coin) DO UPDATE SET last_fired_at = :now"
        " WHERE autowithdraw_state.last_fired_at IS NULL OR autowithdraw_state.last_fired_at <= :since"
        " RETURNING coin", {"m": merchant_id, "c": coin, "now": now, "since": now - cooldown})
    return fired is not None


async def record(gateway: "Gateway", merchant_id: str, coin: str, *, error: str | None, payout_id: str | None,
                 release_to: int | None = None, release: bool = False) -> None:
    """Write the attempt's outcome; ``release`` puts the cooldown back (retry at the next check)."""
    sets = "last_error = :e, last_payout_id = COALESCE(:p, last_payout_id)"
    values: dict[str, Any] = {"e": error, "p": payout_id, "m": merchant_id, "c": coin}
    if release:
        sets += ", last_fired_at = :r"
        values["r"] = release_to
    await gateway.db.execute(f"UPDATE autowithdraw_state SET {sets} WHERE merchant_id = :m AND coin = :c", values)
