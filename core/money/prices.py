"""USD prices for display: a 60-second cache in front of a pluggable source.

Prices are informational (SPEC 4.1): never used to compute payout amounts.
A coin whose price cannot be fetched reads 0, and one failing source never
fails the endpoint. Values are Decimal end to end; the API renders them as
JSON numbers written from the exact decimal text.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Callable, Iterable, Mapping, Protocol
from ..types.services import ServiceKey

log = logging.getLogger(__name__)

CACHE_SECONDS = 60
# SPEC 4.2: the fiat currencies a white-label or invoice amount may be priced in.
FIAT_CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CAD", "AUD", "CHF", "CNY", "INR", "RUB")
CENT = Decimal("0.01")
# A quote older than this is not used to value anything (SPEC 4.7: stale-tolerated 10 min).
STALE_LIMIT_SECONDS = 600


def usd_value(units: int, decimals: int, usd_price: Decimal) -> Decimal:
    """``units`` base units of a coin with ``decimals`` at ``usd_price``, in cents rounded half-up.

    Exact: the context holds enough digits for any coin (30 decimals) at any
    price, where the default 28 digits would round an 18-decimal balance first.
    """
    with localcontext() as ctx:
        ctx.prec = 120
        return (Decimal(units).scaleb(-decimals) * usd_price).quantize(CENT, rounding=ROUND_HALF_UP)


def usable_quote(quote: "Quote | None", now: float) -> "Quote | None":  # float ok: a clock time, not money
    """``quote`` when young enough to value a balance with (``STALE_LIMIT_SECONDS``), else None."""
    return quote if quote is not None and now - quote.at <= STALE_LIMIT_SECONDS else None


class PriceSource(Protocol):
    name: str

    async def fetch(self, symbols: Iterable[str]) -> Mapping[str, Decimal]:
        """USD price per symbol; symbols it cannot price are simply absent."""


@dataclass(frozen=True)
class Quote:
    """A coin's last good USD price and the clock time it was fetched (for staleness checks)."""

    usd: Decimal
    at: float


@dataclass
class _Cached:
    at: float
    prices: dict[str, Decimal]


class PriceService:
    """Caches one source's answers for ``CACHE_SECONDS``; misses read as 0.

    The prices plugin keeps one under :data:`PRICES`; absent when that plugin is blocked.
    """

    def __init__(
        self,
        source: PriceSource,
        symbols: Iterable[str],
        clock: Callable[[], float],
        cache_seconds: int = CACHE_SECONDS,
    ) -> None:
        self.source = source
        self.symbols = list(symbols)
        self._clock = clock
        self._cache_seconds = cache_seconds
        self._cached: _Cached | None = None
        self._fiat_cache: _Cached | None = None
        self._last_good: dict[str, Quote] = {}  # survives a failing source, so callers can judge age
        self._lock = asyncio.Lock()

    async def prices(self) -> dict[str, Decimal]:
        """Every coin's USD price (0 where unknown), refreshed at most once a minute."""
        symbols = self.symbols
        async with self._lock:  # one upstream call when many requests miss at once
            cached = self._cached
            if cached is None or self._clock() - cached.at >= self._cache_seconds:
                try:
                    fetched = dict(await self.source.fetch(symbols))
                except Exception as exc:  # noqa: BLE001 - a price feed outage is not an API error
                    log.warning("price source %s failed: %s", self.source.name, exc)
                    fetched = {}
                cached = self._cached = _Cached(self._clock(), fetched)
                self._last_good.update({s: Quote(p, cached.at) for s, p in fetched.items() if p > 0})
        return {symbol: cached.prices.get(symbol, Decimal(0)) for symbol in symbols}

    async def price(self, symbol: str) -> Decimal:
        return (await self.prices()).get(symbol, Decimal(0))

    async def quotes(self) -> dict[str, Quote]:
        """The last good price of each coin with its fetch time; a coin never priced is absent.

        Unlike ``prices()``, a source outage does not zero a coin: its previous
        quote stays, and the caller decides how old is too old (the portfolio
        tolerates 10 minutes, SPEC 4.7).
        """
        await self.prices()
        return dict(self._last_good)

    async def fiat_per_usd(self, fiat: str) -> Decimal:
        """Units of ``fiat`` per US dollar (1 for USD); 0 when unknown."""
        if fiat == "USD":
            return Decimal(1)
        async with self._lock:
            cached = self._fiat_cache
            if cached is None or self._clock() - cached.at >= self._cache_seconds:
                fetch = getattr(self.source, "fetch_fiat", None)
                try:
                    table = dict(await fetch(FIAT_CURRENCIES)) if fetch else {}
                except Exception as exc:  # noqa: BLE001 - an FX outage is not an API error
                    log.warning("price source %s failed on fiat rates: %s", self.source.name, exc)
                    table = {}
                cached = self._fiat_cache = _Cached(self._clock(), table)
        return cached.prices.get(fiat, Decimal(0))

    def unpriced_reason(self, key: str) -> str | None:
        """Why the source gave ``key`` (a coin or a fiat code) no price at its last fetch, when it says.

        A source that weighs several others (the prices plugin's consensus) keeps an ``unpriced`` table;
        the 503 of a fiat-priced payment then names the reason instead of a bare "no rate".
        """
        reasons = getattr(self.source, "unpriced", None)
        return reasons.get(key) if isinstance(reasons, dict) else None

    async def coin_price_in(self, symbol: str, fiat: str) -> Decimal:
        """Price of one ``symbol`` in ``fiat``; 0 when either side is unknown."""
        usd = await self.price(symbol)
        return usd * await self.fiat_per_usd(fiat)


PRICES = ServiceKey("prices", PriceService)  # the prices plugin's service, when it is loaded
