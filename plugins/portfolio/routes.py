"""GET /dashboard/portfolio (SPEC 4.7): every accepted coin, its balance and USD value."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ...api import available_balance, envelope, gateway_of, merchant_record, principal_of, requires
from ...api import PRICES
from .valuation import portfolio

routes = web.RouteTableDef()


@routes.get("/dashboard/portfolio")
@requires("jwt")
async def show(request: web.Request) -> web.Response:
    """SPEC 4.7: response data ``portfolio`` (2.16), as the account route answers ``account`` (2.15)."""
    return envelope({"portfolio": await merchant_portfolio(gateway_of(request), principal_of(request).merchant_id)})


async def merchant_portfolio(gateway: Any, merchant_id: str) -> dict[str, Any]:
    """The portfolio of one merchant (the route's answer and the dashboard page's)."""
    merchant = await merchant_record(gateway, merchant_id)
    holdings = []
    for symbol in merchant.accepted_coins:
        coin = gateway.coins.get(symbol)
        if coin is not None:  # a coin whose chain plugin was removed has no decimals to format with
            holdings.append((coin, await available_balance(gateway, merchant.merchant_id, symbol)))
    service = gateway.services.get(PRICES)
    quotes = await service.quotes() if service is not None else {}
    return portfolio(merchant.account_id, holdings, quotes, gateway.clock())
