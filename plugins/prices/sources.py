"""Price sources, one per wire format: the static development table and three public ticker APIs.

Each source answers ``fetch(symbols) -> {symbol: USD price}`` (a symbol it cannot price is absent) and,
where its API has them, ``fetch_fiat(currencies) -> {currency: units per USD}``. Numbers are read as
Decimal straight from the JSON text. Which asset a coin is at an exchange is its *ticker*: the part of
the symbol before ``_`` (``USDT_ERC20`` prices as ``USDT``, ``BTC_LN`` as ``BTC``) unless the operator's
``tickers`` table says otherwise; CoinGecko names assets by id instead (each coin's ``price_id``).
"""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any, Callable, Iterable, Mapping

import httpx

COINGECKO_URL = "https://api.coingecko.com/api/v3"
COINBASE_URL = "https://api.coinbase.com"
KRAKEN_URL = "https://api.kraken.com"

# Development exchange rates: units of each currency per US dollar.
STATIC_FIAT_PER_USD = {
    "USD": "1", "EUR": "0.9", "GBP": "0.8", "JPY": "150", "CAD": "1.35", "AUD": "1.5",
    "CHF": "0.9", "CNY": "7.2", "INR": "83", "RUB": "90",
}
# Kraken's own names for two assets (its asset pairs API): everything else is the usual ticker.
KRAKEN_NAMES = {"BTC": "XBT", "DOGE": "XDG"}


def ticker_of(symbol: str, overrides: Mapping[str, str]) -> str:
    """The asset a coin is quoted as at an exchange: the operator's override, else the symbol before ``_``."""
    return overrides.get(symbol) or symbol.split("_", 1)[0]


def decimal_at(body: object, *path: str) -> Decimal | None:
    """The finite, non-negative number at ``path`` of a JSON body, else None."""
    node = body
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    if isinstance(node, list) and node:
        node = node[0]  # Kraken's [price, volume] pairs
    if not isinstance(node, (Decimal, int, str)) or isinstance(node, bool):
        return None  # null, an object, an array or a float (JSON numbers arrive as Decimal)
    try:
        value = Decimal(node)
    except (TypeError, ValueError, InvalidOperation):
        return None
    return value if value.is_finite() and value >= 0 else None


async def get_json(url: str, *, params: Mapping[str, str] | None = None, headers: Mapping[str, str] | None = None,
                   timeout: float) -> object:
    """One GET whose body is JSON read with exact decimals; an HTTP error status raises."""
    async with httpx.AsyncClient(timeout=timeout) as client:
        response = await client.get(url, params=params, headers={"accept": "application/json", **(headers or {})})
        response.raise_for_status()
        return json.loads(response.content, parse_float=Decimal)


class StaticPriceSource:
    """Fixed development prices: round numbers, obviously not live (refused in production)."""

    name = "static"

    def __init__(self, table: Mapping[str, str], overrides: Mapping[str, str] | None = None) -> None:
        self.table = {k: Decimal(v) for k, v in {**table, **(overrides or {})}.items()}

    async def fetch(self, symbols: Iterable[str]) -> dict[str, Decimal]:
        return {s: self.table[s] for s in symbols if s in self.table}

    async def fetch_fiat(self, currencies: Iterable[str]) -> dict[str, Decimal]:
        return {c: Decimal(STATIC_FIAT_PER_USD[c]) for c in currencies if c in STATIC_FIAT_PER_USD}


class CoinGeckoPriceSource:
    """CoinGecko's wire format: ``/simple/price`` for coins, ``/exchange_rates`` for fiat.

    With ``max_age_seconds`` the price's own ``last_updated_at`` is asked for, and a price older than that
    against ``clock`` is left out: an API that stopped updating one coin does not price it forever. A price
    without the field (a compatible API that does not tell its age) is taken as of the fetch.
    """

    name = "coingecko"

    def __init__(self, ids: Mapping[str, str], url: str = COINGECKO_URL, api_key: str = "", timeout: float = 10,
                 *, max_age_seconds: int | None = None, clock: Callable[[], float] | None = None) -> None:
        self.ids = dict(ids)  # coin symbol -> CoinGecko id
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.max_age_seconds = max_age_seconds
        self.clock = clock
        self.unpriced: dict[str, str] = {}  # symbol -> why the last fetch left it out (read by the service)

    async def _get(self, path: str, params: Mapping[str, str] | None = None) -> object:
        headers = {"x-cg-demo-api-key": self.api_key} if self.api_key else {}
        return await get_json(f"{self.url}{path}", params=params, headers=headers, timeout=self.timeout)

    async def fetch(self, symbols: Iterable[str]) -> dict[str, Decimal]:
        wanted = {s: self.ids[s] for s in symbols if s in self.ids}
        if not wanted:
            return {}
        params = {"ids": ",".join(sorted(set(wanted.values()))), "vs_currencies": "usd"}
        if self.max_age_seconds is not None:
            params["include_last_updated_at"] = "true"
        body = await self._get("/simple/price", params)
        prices = {}
        self.unpriced.clear()
        for symbol, coin_id in wanted.items():
            value = decimal_at(body, coin_id, "usd")
            age, bound = self._age(body, coin_id), self.max_age_seconds
            if value is not None and bound is not None and age is not None and age > bound:
                self.unpriced[symbol] = f"the {self.name} price of {symbol} is {age} s old (at most {bound} s)"
            elif value is not None:
                prices[symbol] = value  # absent ones are reported as 0 by the service
        return prices

    def _age(self, body: object, coin_id: str) -> int | None:
        """Seconds since the API last updated the price; None where it does not say (the cache bounds it)."""
        updated = decimal_at(body, coin_id, "last_updated_at")
        if updated is None or self.clock is None:
            return None
        return int(self.clock() - float(updated))

    async def fetch_fiat(self, currencies: Iterable[str]) -> dict[str, Decimal]:
        """Units per USD, from the BTC-based table: rate[fiat] / rate[usd]."""
        body = await self._get("/exchange_rates")
        usd = decimal_at(body, "rates", "usd", "value")
        if not usd:
            return {}
        rates = {}
        for code in currencies:
            value = decimal_at(body, "rates", code.lower(), "value")
            if value:
                rates[code] = value / usd
        return rates


class CoinbasePriceSource:
    """Coinbase's public ``/v2/exchange-rates?currency=USD``: units of every asset and currency per dollar.

    One request prices every coin (1 / rate) and gives every fiat rate as is.
    """

    name = "coinbase"

    def __init__(self, url: str = COINBASE_URL, tickers: Mapping[str, str] | None = None, timeout: float = 10) -> None:
        self.url = url.rstrip("/")
        self.tickers = dict(tickers or {})
        self.timeout = timeout

    async def _rates(self) -> object:
        return await get_json(f"{self.url}/v2/exchange-rates", params={"currency": "USD"}, timeout=self.timeout)

    async def fetch(self, symbols: Iterable[str]) -> dict[str, Decimal]:
        body = await self._rates()
        prices = {}
        for symbol in symbols:
            per_usd = decimal_at(body, "data", "rates", ticker_of(symbol, self.tickers))
            if per_usd:
                with localcontext() as ctx:
                    ctx.prec = 34  # far past any price's meaningful digits; the payer's amount is rounded up later
                    prices[symbol] = (Decimal(1) / per_usd).normalize()
        return prices

    async def fetch_fiat(self, currencies: Iterable[str]) -> dict[str, Decimal]:
        body = await self._rates()
        rates = {}
        for code in currencies:
            value = decimal_at(body, "data", "rates", code)
            if value:
                rates[code] = value
        return rates


class KrakenPriceSource:
    """Kraken's public ``/0/public/Ticker``: the last trade (``c``) of each ``<asset>USD`` pair, in one request.

    Kraken answers some pairs under their legacy names (``XBTUSD`` as ``XXBTZUSD``); both are read.
    """

    name = "kraken"

    def __init__(self, url: str = KRAKEN_URL, tickers: Mapping[str, str] | None = None, timeout: float = 10) -> None:
        self.url = url.rstrip("/")
        self.tickers = dict(tickers or {})
        self.timeout = timeout

    def _asset(self, symbol: str) -> str:
        ticker = ticker_of(symbol, self.tickers)
        return KRAKEN_NAMES.get(ticker, ticker)

    async def _tickers(self, pairs: Iterable[str]) -> dict[str, Any]:
        body: Any = await get_json(f"{self.url}/0/public/Ticker", params={"pair": ",".join(sorted(pairs))},
                                   timeout=self.timeout)
        result = body.get("result") if isinstance(body, dict) else None
        return result if isinstance(result, dict) else {}

    async def fetch(self, symbols: Iterable[str]) -> dict[str, Decimal]:
        assets = {symbol: self._asset(symbol) for symbol in symbols}
        if not assets:
            return {}
        pairs = {f"{asset}USD" for asset in assets.values()}
        result = await self._tickers(pairs)
        if not result and len(pairs) > 1:
            # One pair Kraken does not list fails the whole request ("EQuery:Unknown asset pair"): ask singly.
            answers = await asyncio.gather(*(self._tickers([pair]) for pair in pairs), return_exceptions=True)
            result = {k: v for answer in answers if isinstance(answer, dict) for k, v in answer.items()}
        prices = {}
        for symbol, asset in assets.items():
            for name in (f"{asset}USD", f"X{asset}ZUSD", f"{asset}ZUSD"):
                value = decimal_at(result, name, "c")
                if value:
                    prices[symbol] = value
                    break
        return prices
