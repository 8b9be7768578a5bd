"""The portfolio's dashboard page (``register_dashboard_pages``): the same numbers as GET /dashboard/portfolio."""

from __future__ import annotations

from typing import Any, Mapping

from ...api import DashboardView
from .routes import merchant_portfolio


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str]) -> DashboardView:
    return DashboardView("portfolio/dashboard.html", {"portfolio": await merchant_portfolio(gateway, merchant_id)})
