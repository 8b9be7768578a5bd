"""Coins whose payouts wait, and why (``payout_pauses``): set and lifted by the custody check.

Why here, not in the custody room: waiting is the payout worker's
behaviour, so the payouts room owns the table; the custody check (a room
above) only says when. A paused coin's queued payouts are not signed and
not failed (no attempt is counted); signed ones still go to the chain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..infra.db import Database


async def pause_reason(db: "Database", coin: str) -> str | None:
    """Why payouts of ``coin`` wait, or None when they may go."""
    value = await db.fetch_val("SELECT reason FROM payout_pauses WHERE coin = :c", {"c": coin})
    return None if value is None else str(value)


async def paused_coins(db: "Database") -> dict[str, str]:
    return {r["coin"]: r["reason"] for r in await db.fetch_all("SELECT coin, reason FROM payout_pauses")}


async def pause(db: "Database", coin: str, reason: str, now: int) -> None:
    """Pause (or re-word the pause of) ``coin``; ``since`` keeps the first time."""
    await db.execute(
        "INSERT INTO payout_pauses (coin, reason, since) VALUES (:c, :r, :t)"
        " ON CONFLICT (coin) DO UPDATE SET reason = excluded.reason", {"c": coin, "r": reason, "t": now})


async def lift(db: "Database", coin: str) -> None:
    await db.execute("DELETE FROM payout_pauses WHERE coin = :c", {"c": coin})
