"""The analytics dashboard page: the 30-day report of GET /dashboard/analytics with a server-side SVG chart."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Mapping

from markupsafe import Markup

from ...api import DashboardView
from .chart import bar_chart
from .report import analytics


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str]) -> DashboardView:
    report = await analytics(gateway, merchant_id)
    days = [d["date"] for d in report["daily"]]
    chart = bar_chart("Deposits per day, USD, last 30 days", days, [d["deposits_usd"] for d in report["daily"]])
    return DashboardView("analytics/dashboard.html", {"report": report, "chart": Markup(chart),
                                                      "as_of": await standby_as_of(gateway)})


async def standby_as_of(gateway: Any) -> str | None:
    """When the figures were read from a standby (``[database] read_url``): the moment they are as of."""
    replayed = await gateway.reports_db.replayed_at()
    if replayed is None:
        return None
    moment = datetime.fromtimestamp(replayed, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"Read from a standby: figures as of {moment} ({max(0, gateway.now() - replayed)} s before this page)"
