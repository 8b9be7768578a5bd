"""Dashboard routes of swaps and auto-settle (SPEC 4.12, 2.15): thin, the work is in ``service`` and ``settle``."""

from __future__ import annotations

from aiohttp import web

from ...api import ValidationError, envelope, gateway_of, pagination, principal_of, rate_class, read_json, requires
from . import service, settle

routes = web.RouteTableDef()


@routes.post("/dashboard/swap/quote")
@requires("jwt", scope="swap:create")
@rate_class("read")  # SPEC 8: a swap quote counts as a read
async def post_quote(request: web.Request) -> web.Response:
    return envelope(await service.quote(gateway_of(request), await read_json(request)))


@routes.post("/dashboard/swap")
@requires("jwt", scope="swap:create")
async def post_swap(request: web.Request) -> web.Response:
    gateway, principal = gateway_of(request), principal_of(request)
    return envelope(await service.commit(gateway, principal.merchant_id, await read_json(request), principal=principal))


@routes.get("/dashboard/swap/{swap_id}")
@requires("jwt")
async def get_swap(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    return envelope(await service.get_swap(gateway, merchant_id, request.match_info["swap_id"]))


@routes.get("/dashboard/swaps")
@requires("jwt")
async def list_swaps(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    limit, offset = pagination(request.query, default_limit=50, max_limit=200)
    return envelope(await service.list_swaps(gateway, merchant_id, limit=limit, offset=offset))


@routes.get("/dashboard/settings/settlement-coin")
@requires("jwt")
async def get_settlement_coin(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    return envelope({"default_settlement_coin": await settle.default_settlement_coin(gateway, merchant_id)})


@routes.put("/dashboard/settings/settlement-coin")
@requires("jwt", scope="settings:manage")
async def put_settlement_coin(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    body = await read_json(request)
    if "default_settlement_coin" not in body:
        raise ValidationError({"default_settlement_coin": "is required (a coin symbol, or null to clear it)"})
    coin = await settle.set_default(gateway, merchant_id, body["default_settlement_coin"])
    return envelope({"default_settlement_coin": coin})
