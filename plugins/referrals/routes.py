"""GET /dashboard/referrals (SPEC 4.7)."""

from __future__ import annotations

from aiohttp import web

from ...api import envelope, gateway_of, principal_of, requires
from .stats import referral_stats

routes = web.RouteTableDef()


@routes.get("/dashboard/referrals")
@requires("jwt")
async def referrals(request: web.Request) -> web.Response:
    return envelope(await referral_stats(gateway_of(request), principal_of(request).merchant_id))
