"""GET /dashboard/analytics (SPEC 4.7)."""

from __future__ import annotations

from aiohttp import web

from ...web.auth import principal_of, requires
from ...web.envelope import envelope
from ...web.keys import gateway_of
from .report import analytics

routes = web.RouteTableDef()


@routes.get("/dashboard/analytics")
@requires("jwt")
async def show(request: web.Request) -> web.Response:
    return envelope(await analytics(gateway_of(request), principal_of(request).merchant_id))
