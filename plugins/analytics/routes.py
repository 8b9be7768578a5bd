"""GET /dashboard/analytics (SPEC 4.7)."""

from __future__ import annotations

from aiohttp import web

from ...api import envelope, gateway_of, principal_of, requires
from .report import analytics

routes = web.RouteTableDef()


@routes.get("/dashboard/analytics")
@requires("jwt")
async def show(request: web.Request) -> web.Response:
    return envelope(await analytics(gateway_of(request), principal_of(request).merchant_id))
