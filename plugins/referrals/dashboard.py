"""The referrals dashboard page: the stats of GET /dashboard/referrals and the link to share."""

from __future__ import annotations

from typing import Any, Mapping

from ...api import DashboardView
from .stats import referral_stats


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str]) -> DashboardView:
    return DashboardView("referrals/dashboard.html", {"stats": await referral_stats(gateway, merchant_id)})
