"""The dashboard's "Tip page" entry (issue 49 item 6): where a merchant finds the address of their tip page.

The tip page itself is public and keyed by the account id (routes.py); this
page only shows its address, a QR code of it for a counter or a printed card,
and the coins a payer can tip in right now.
"""

from __future__ import annotations

from typing import Any, Mapping

from ...api import DashboardView, merchant_record, qr_svg, receivable_coins

PAGE_PATH = "/app/tip-page"


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str]) -> DashboardView:
    merchant = await merchant_record(gateway, merchant_id)
    url = f"{gateway.config.base_url}/tip/{merchant.account_id}"
    return DashboardView("tips/dashboard.html", {
        "tip_url": url, "coins": receivable_coins(gateway, merchant), "qr": await qr_svg(gateway.cpu, url, scale=4)})
