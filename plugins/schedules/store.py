"""The ``payout_schedules`` table: create, read, change, delete, and the claim of a due run.

Every read and write names the merchant, so another merchant's schedule is
simply not found (404).
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any, Mapping

from ...api import insert_statement, merchant_row, merchant_row_count, merchant_rows, update_row

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

Row = Mapping[str, Any]
COLUMNS = ("id", "merchant_id", "coin", "destination", "min_amount", "interval_sec", "enabled", "last_run_at",
           "last_error", "last_payout_id", "next_run_at", "created_at")


async def count(gateway: "Gateway", merchant_id: str) -> int:
    return await merchant_row_count(gateway, "payout_schedules", merchant_id)


async def insert(gateway: "Gateway", merchant_id: str, *, coin: str, destination: str, min_amount: int,
                 interval_sec: int) -> Row:
    now = gateway.now()
    row = {"id": "sch_" + secrets.token_hex(8), "merchant_id": merchant_id, "coin": coin,
           "destination": destination, "min_amount": gateway.db.amount_param(min_amount),
           "interval_sec": interval_sec, "enabled": True, "next_run_at": now + interval_sec, "created_at": now}
    await gateway.db.execute(insert_statement("payout_schedules", row), row)
    return await get(gateway, merchant_id, row["id"])


async def get(gateway: "Gateway", merchant_id: str, schedule_id: str) -> Row:
    return await merchant_row(gateway, "payout_schedules", merchant_id, schedule_id)


async def list_for(gateway: "Gateway", merchant_id: str) -> list[Row]:
    return await merchant_rows(gateway, "payout_schedules", merchant_id)


async def update(gateway: "Gateway", merchant_id: str, schedule_id: str, changes: Mapping[str, Any]) -> Row:
    await get(gateway, merchant_id, schedule_id)
    if changes:
        values = dict(changes)
        if "min_amount" in values:
            values["min_amount"] = gateway.db.amount_param(values["min_amount"])
        await update_row(gateway, "payout_schedules", schedule_id, values, merchant_id=merchant_id)
    return await get(gateway, merchant_id, schedule_id)


async def delete(gateway: "Gateway", merchant_id: str, schedule_id: str) -> None:
    await get(gateway, merchant_id, schedule_id)
    await gateway.db.execute("DELETE FROM payout_schedules WHERE id = :i AND merchant_id = :m",
                             {"i": schedule_id, "m": merchant_id})


async def due(gateway: "Gateway", now: int, limit: int) -> list[Row]:
    """Enabled schedules whose ``next_run_at`` has passed, oldest first."""
    return await gateway.db.fetch_all(
        "SELECT * FROM payout_schedules WHERE enabled = :on AND next_run_at <= :now ORDER BY next_run_at, id"
        " LIMIT :limit", {"on": True, "now": now, "limit": limit})


async def claim(gateway: "Gateway", row: Row, *, now: int, next_run_at: int) -> bool:
    """Advance ``next_run_at`` if nobody else did since ``row`` was read: True for the one winner.

    This commits before the payout is attempted, so a second tick (another
    process, or this one after a crash) finds the run already taken.
    """
    claimed = await gateway.db.fetch_val(
        "UPDATE payout_schedules SET next_run_at = :next, last_run_at = :now"
        " WHERE id = :id AND enabled = :on AND next_run_at = :old RETURNING id",
        {"next": next_run_at, "now": now, "id": row["id"], "on": True, "old": row["next_run_at"]})
    return claimed is not None


async def record_result(gateway: "Gateway", schedule_id: str, *, error: str | None, payout_id: str | None) -> None:
    await gateway.db.execute(
        "UPDATE payout_schedules SET last_error = :e, last_payout_id = COALESCE(:p, last_payout_id) WHERE id = :i",
        {"e": error, "p": payout_id, "i": schedule_id})
