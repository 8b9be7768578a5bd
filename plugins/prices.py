"""Built-in plugin: USD price sources for ``/v1/common/prices``.

Two sources: ``static`` (offline, fixed development prices, the default so
``make run`` needs no network) and ``coingecko`` (any API speaking
CoinGecko's ``/simple/price`` format). Choose with::

    [plugin.prices]
    source = "coingecko"            # or "static", or the name of a source another plugin registers
    url = "https://api.coingecko.com/api/v3"
    api_key = ""                    # sent as x-cg-demo-api-key when set
    static = { BTC = "65000" }      # overrides of the static table

The coins' prices come from the coin registry: each chain plugin declares its
coins' ``price_id`` (the CoinGecko id; tokens price as their asset) and
``dev_price_usd`` (the static development price). No coin is named here.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any, Iterable, Mapping

import httpx

from ..api import ConfigError, PriceService, hookimpl

PLUGIN_NAME = "prices"
DEFAULT_URL = "https://api.coingecko.com/api/v3"
_KEYS = {"source", "url", "api_key", "static", "timeout_seconds"}

# Development exchange rates: units of each currency per US dollar.
STATIC_FIAT_PER_USD = {
    "USD": "1", "EUR": "0.9", "GBP": "0.8", "JPY": "150", "CAD": "1.35", "AUD": "1.5",
    "CHF": "0.9", "CNY": "7.2", "INR": "83", "RUB": "90",
}


def static_prices(coins: Iterable[Any]) -> dict[str, str]:
    """The development price of every registered coin that declares one."""
    return {coin.symbol: coin.dev_price_usd for coin in coins if coin.dev_price_usd is not None}


def price_ids(coins: Iterable[Any]) -> dict[str, str]:
    """The CoinGecko id of every registered coin that declares one."""
    return {coin.symbol: coin.price_id for coin in coins if coin.price_id}


class StaticPriceSource:
    """Fixed development prices: round numbers, obviously not live."""

    name = "static"

    def __init__(self, table: Mapping[str, str], overrides: Mapping[str, str] | None = None) -> None:
        self.table = {k: Decimal(v) for k, v in {**table, **(overrides or {})}.items()}

    async def fetch(self, symbols: Iterable[str]) -> dict[str, Decimal]:
        return {s: self.table[s] for s in symbols if s in self.table}

    async def fetch_fiat(self, currencies: Iterable[str]) -> dict[str, Decimal]:
        return {c: Decimal(STATIC_FIAT_PER_USD[c]) for c in currencies if c in STATIC_FIAT_PER_USD}


class CoinGeckoPriceSource:
    """CoinGecko's wire format: ``/simple/price`` for coins, ``/exchange_rates`` for fiat.

    Numbers are read as Decimal straight from the JSON text.
    """

    name = "coingecko"

    def __init__(self, ids: Mapping[str, str], url: str = DEFAULT_URL, api_key: str = "", timeout: float = 10) -> None:
        self.ids = dict(ids)  # coin symbol -> CoinGecko id
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout

    async def _get(self, path: str, params: Mapping[str, str] | None = None) -> object:
        headers = {"accept": "application/json"}
        if self.api_key:
            headers["x-cg-demo-api-key"] = self.api_key
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            response = await client.get(f"{self.url}{path}", params=params, headers=headers)
            response.raise_for_status()
            return json.loads(response.content, parse_float=Decimal)

    async def fetch(self, symbols: Iterable[str]) -> dict[str, Decimal]:
        wanted = {s: self.ids[s] for s in symbols if s in self.ids}
        if not wanted:
            return {}
        body = await self._get("/simple/price", {"ids": ",".join(sorted(set(wanted.values()))), "vs_currencies": "usd"})
        prices = {}
        for symbol, coin_id in wanted.items():
            value = _decimal_at(body, coin_id, "usd")
            if value is not None:
                prices[symbol] = value  # absent ones are reported as 0 by the service
        return prices

    async def fetch_fiat(self, currencies: Iterable[str]) -> dict[str, Decimal]:
        """Units per USD, from the BTC-based table: rate[fiat] / rate[usd]."""
        body = await self._get("/exchange_rates")
        usd = _decimal_at(body, "rates", "usd", "value")
        if not usd:
            return {}
        rates = {}
        for code in currencies:
            value = _decimal_at(body, "rates", code.lower(), "value")
            if value:
                rates[code] = value / usd
        return rates


def _decimal_at(body: object, *path: str) -> Decimal | None:
    """The finite, non-negative number at ``path`` of a JSON body, else None."""
    node = body
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    if not isinstance(node, (Decimal, int, float, str)):
        return None  # null, an object or an array: not a number (JSON floats arrive as Decimal)
    try:
        value = Decimal(node)
    except (TypeError, ValueError, InvalidOperation):
        return None
    return value if value.is_finite() and value >= 0 else None


@hookimpl
def check_config(gateway) -> None:
    block = gateway.config.plugin_config(PLUGIN_NAME)
    for key in block:
        if key not in _KEYS:
            raise ConfigError(f"unknown config key 'plugin.{PLUGIN_NAME}.{key}'")
    source = block.get("source", "static")
    if not isinstance(source, str) or not source:
        raise ConfigError(f"config key 'plugin.{PLUGIN_NAME}.source' must name a price source")
    for symbol, value in dict(block.get("static", {})).items():
        try:
            Decimal(str(value))
        except InvalidOperation:
            raise ConfigError(f"config key 'plugin.{PLUGIN_NAME}.static.{symbol}' must be a decimal string") from None


@hookimpl(trylast=True)
def register_price_sources(registry, gateway) -> None:
    # Last, so every other plugin's source is registered before the choice is checked.
    block = gateway.config.plugin_config(PLUGIN_NAME)
    overrides = {k: str(v) for k, v in dict(block.get("static", {})).items()}
    registry.add(StaticPriceSource(static_prices(gateway.coins), overrides))
    registry.add(CoinGeckoPriceSource(price_ids(gateway.coins), block.get("url", DEFAULT_URL),
                                      block.get("api_key", ""), float(block.get("timeout_seconds", 10))))
    chosen = block.get("source", "static")
    if chosen not in registry:
        raise ConfigError(f"config key 'plugin.{PLUGIN_NAME}.source': no price source {chosen!r}"
                          f" (registered: {', '.join(sorted(registry.names()))})")


@hookimpl
def gateway_started(gateway) -> None:
    chosen = gateway.config.plugin_config(PLUGIN_NAME).get("source", "static")
    source = gateway.price_sources.get(chosen)
    if source is not None:
        gateway.services["prices"] = PriceService(source, gateway.coins.names(), lambda: gateway.clock())
