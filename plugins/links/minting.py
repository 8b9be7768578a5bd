"""Minting an invoice for a public visitor: the per-IP bound, then the core's invoice service.

Shared by the link resolver and the tip page (``orbchain.plugins.tips``):
both let anyone create invoices, so both spend the same kind of budget,
counted by the core's rate limiter (shared across processes on PostgreSQL).
"""

from __future__ import annotations

from aiohttp import web

from ...api import client_ip, count_request, gateway_of
from .settings import settings_of


async def spend_mint_budget(request: web.Request, plugin: str) -> None:
    """One invoice minted by this client IP through ``plugin``; 429 (Retry-After) past the budget."""
    limit = settings_of(gateway_of(request), plugin).mint_per_minute
    if limit:
        await count_request(request, f"{plugin}.mint:ip:{client_ip(request)}", limit)


def pay_page(track_id: str) -> str:
    """Where the payer goes next: the core's hosted page of the invoice."""
    return f"/pay/{track_id}"
