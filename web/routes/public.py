"""Public endpoints (SPEC 4.1): health, coin table, prices, receipt public key."""

from __future__ import annotations

from typing import Iterable

from aiohttp import web

from ...core.money.coins import Coin
from ...core.types.errors import NotConfigured
from ...core.payments.receipts import public_key_fields
from ..envelope import JsonNumber, envelope, envelope_text
from ..keys import gateway_of
from ..middlewares import rate_class
from ...core.money.prices import PRICES

routes = web.RouteTableDef()


class CoinTableText:
    """``GET /v1/common/currencies`` rendered once, again only when the coin table changes.

    The body depends on nothing but the coin objects (frozen dataclasses; a
    change such as ``pin_contract`` replaces one), so comparing them by
    identity is enough to know the text is still right.
    """

    def __init__(self) -> None:
        self._coins: tuple[Coin, ...] = ()
        self._text = ""

    def text(self, coins: Iterable[Coin]) -> str:
        current = tuple(coins)
        if len(current) != len(self._coins) or any(a is not b for a, b in zip(current, self._coins)):
            self._text = envelope_text([coin.currency_entry() for coin in current])
            self._coins = current
        return self._text


_coin_table = CoinTableText()


@routes.get("/health")
@rate_class(None)
async def health(request: web.Request) -> web.Response:
    # A bare object, not the envelope (SPEC 2.1); 200 while the process runs.
    return web.json_response(text='{"ok": true}\n')  # a line, as curl and shell scripts expect


@routes.get("/v1/common/currencies")
async def currencies(request: web.Request) -> web.Response:
    return web.json_response(text=_coin_table.text(gateway_of(request).coins))


@routes.get("/v1/common/prices")
async def prices(request: web.Request) -> web.Response:
    service = gateway_of(request).services.get(PRICES)
    if service is None:
        raise NotConfigured()
    table = await service.prices()
    return envelope({symbol: JsonNumber(value) for symbol, value in table.items()})


@routes.get("/v1/common/receipt-public-key")
async def receipt_public_key(request: web.Request) -> web.Response:
    return envelope(public_key_fields(gateway_of(request)))
