"""``/dashboard/approvals``: held payouts and transfers, and approving (TOTP) or rejecting one (``payout:approve``)."""

from __future__ import annotations

from aiohttp import web

from ...api import envelope, gateway_of, principal_of, read_json, requires
from . import holds
from .views import decision_view, held_view

routes = web.RouteTableDef()
SCOPE = "payout:approve"


@routes.get("/dashboard/approvals")
@requires("jwt", scope=SCOPE)
async def listing(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    rows = await holds.awaiting(gateway, merchant_id)
    return envelope({"held": [await held_view(gateway, merchant_id, row) for row in rows]})


@routes.post("/dashboard/approvals/{id}/approve")
@requires("jwt", scope=SCOPE)
async def approve(request: web.Request) -> web.Response:
    gateway, principal = gateway_of(request), principal_of(request)
    body = await read_json(request)
    hold = await holds.approve(gateway, principal, request.match_info["id"], body.get("totp_code"))
    return envelope(decision_view(hold))


@routes.post("/dashboard/approvals/{id}/reject")
@requires("jwt", scope=SCOPE)
async def reject(request: web.Request) -> web.Response:
    gateway, principal = gateway_of(request), principal_of(request)
    hold = await holds.reject(gateway, principal.merchant_id, request.match_info["id"], principal.requester)
    return envelope(decision_view(hold))
