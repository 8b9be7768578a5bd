"""Public endpoints (SPEC 4.1): health, coin table, prices, receipt public key."""

from __future__ import annotations

from aiohttp import web

from ...core.errors import NotConfigured
from ...core.receipts import public_key_fields
from ..envelope import JsonNumber, envelope
from ..keys import gateway_of
from ..middlewares import rate_class

routes = web.RouteTableDef()


@routes.get("/health")
@rate_class(None)
async def health(request: web.Request) -> web.Response:
    # A bare object, not the envelope (SPEC 2.1); 200 while the process runs.
    return web.json_response({"ok": True})


@routes.get("/v1/common/currencies")
async def currencies(request: web.Request) -> web.Response:
    return envelope([coin.currency_entry() for coin in gateway_of(request).coins])


@routes.get("/v1/common/prices")
async def prices(request: web.Request) -> web.Response:
    service = gateway_of(request).services.get("prices")
    if service is None:
        raise NotConfigured()
    table = await service.prices()
    return envelope({symbol: JsonNumber(value) for symbol, value in table.items()})


@routes.get("/v1/common/receipt-public-key")
async def receipt_public_key(request: web.Request) -> web.Response:
    return envelope(public_key_fields(gateway_of(request)))
