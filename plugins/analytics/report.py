"""GET /dashboard/analytics as data: the last 30 UTC days, oldest first, and their totals."""

from __future__ import annotations

from datetime import datetime, timedelta, UTC
from typing import TYPE_CHECKING, Any

from ...api import USD_DECIMALS, format_units

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

WINDOW_DAYS = 30


def usd(units: int) -> str:
    return format_units(int(units), USD_DECIMALS)


def window(now: int, days: int = WINDOW_DAYS) -> list[str]:
    today = datetime.fromtimestamp(int(now), tz=UTC).date()
    return [(today - timedelta(days=back)).isoformat() for back in range(days - 1, -1, -1)]


async def analytics(gateway: "Gateway", merchant_id: str) -> dict[str, Any]:
    days = window(gateway.now())
    rows = await gateway.reports_db.fetch_all(  # a standby when [database] read_url is set: reports only
        "SELECT day, deposits_usd, payouts_usd, deposit_count, payout_count FROM analytics_daily"
        " WHERE merchant_id = :m AND day >= :first AND day <= :last",
        {"m": merchant_id, "first": days[0], "last": days[-1]})
    by_day = {row["day"]: row for row in rows}
    daily = []
    sums = [0, 0, 0, 0]
    for day in days:
        row = by_day.get(day)
        values = [int(row[name]) for name in ("deposits_usd", "payouts_usd", "deposit_count", "payout_count")] \
            if row is not None else [0, 0, 0, 0]
        sums = [a + b for a, b in zip(sums, values)]
        daily.append({"date": day, "deposits_usd": usd(values[0]), "payouts_usd": usd(values[1]),
                      "deposit_count": values[2], "payout_count": values[3]})
    return {"daily": daily, "totals": {"total_deposits_usd": usd(sums[0]), "total_payouts_usd": usd(sums[1]),
                                       "total_deposit_count": sums[2], "total_payout_count": sums[3]}}
