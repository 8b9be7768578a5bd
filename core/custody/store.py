"""Custody results in the database: the history, the latest per coin, and the payout pauses they set.

Why in the database: every process (the job's leader, ``orbchain custody
check`` in a shell, each payout worker, whichever process answers a
/metrics scrape) must see one answer. A pause set by a shortfall stays until
a check of that coin comes out clean (ok or surplus); a check that could not
ask the node changes nothing, so an outage neither pauses nor releases.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..payouts.pauses import lift, pause
from .report import CHECKED, SHORTFALL, CustodyReport

if TYPE_CHECKING:  # pragma: no cover
    from ..infra.db import Database

KEEP_CHECKS = 100


async def record_custody_check(db: "Database", report: CustodyReport, *, source: str, pause_payouts: bool,
                               fmt: Callable[[str, int], str]) -> None:
    """Store one check (``source``: "job", "cli", ...) and apply its pauses, in one transaction."""
    at = report.checked_at
    async with db.transaction():
        await db.execute(
            "INSERT INTO custody_checks (checked_at, ok, shortfalls, source, report)"
            " VALUES (:at, :ok, :n, :source, :report)",
            {"at": at, "ok": report.ok, "n": len(report.shortfalls), "source": source,
             "report": "\n".join(report.lines(fmt))})
        await db.execute(
            "DELETE FROM custody_checks WHERE id NOT IN"
            " (SELECT id FROM custody_checks ORDER BY checked_at DESC, id DESC LIMIT :keep)", {"keep": KEEP_CHECKS})
        for coin in report.coins:
            await db.execute(
                "INSERT INTO custody_coins (coin, checked_at, status, held, owed, difference, hot)"
                " VALUES (:coin, :at, :status, :held, :owed, :diff, :hot)"
                " ON CONFLICT (coin) DO UPDATE SET checked_at = excluded.checked_at, status = excluded.status,"
                " held = excluded.held, owed = excluded.owed, difference = excluded.difference, hot = excluded.hot",
                {"coin": coin.coin, "at": at, "status": coin.status,
                 "held": None if coin.held is None else db.amount_param(coin.held),
                 "owed": db.amount_param(coin.owed.total),
                 "diff": None if coin.difference is None else db.amount_param(coin.difference),
                 "hot": None if coin.hot is None else db.amount_param(coin.hot)})
            if coin.status == SHORTFALL and pause_payouts:
                await pause(db, coin.coin, f"custody shortfall of {fmt(coin.coin, coin.shortfall)} {coin.coin}", at)
            elif coin.status in CHECKED:  # clean (or pausing is off): payouts go on
                await lift(db, coin.coin)


async def latest_by_coin(db: "Database") -> list[dict[str, Any]]:
    """The latest result per coin, for /metrics: coin, status, difference and hot (ints, or None when not checked)."""
    rows = await db.fetch_all("SELECT coin, status, difference, hot FROM custody_coins ORDER BY coin")
    return [{"coin": r["coin"], "status": r["status"],
             "difference": None if r["difference"] is None else db.to_int(r["difference"]),
             "hot": None if r["hot"] is None else db.to_int(r["hot"])} for r in rows]


async def last_check_at(db: "Database") -> int | None:
    value = await db.fetch_val("SELECT MAX(checked_at) FROM custody_checks")
    return None if value is None else int(value)
