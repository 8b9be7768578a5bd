"""Built-in plugin: USD price sources for ``/v1/common/prices`` and fiat-priced payments.

Four sources: ``static`` (offline, fixed development prices, the default in development so ``make run``
needs no network, refused in production), ``coingecko`` (any API speaking CoinGecko's ``/simple/price``),
``coinbase`` (Coinbase's public exchange rates) and ``kraken`` (Kraken's public ticker). One source, or
the median of several with bounds (``consensus.py``)::

    [plugin.prices]
    sources = ["coingecko", "coinbase", "kraken"]   # or source = "static" / one name; another plugin's too
    min_sources = 2                 # answers that must agree (default: a majority of sources)
    max_deviation_percent = "2"     # a source further from the median is set aside
    max_age_seconds = 300           # no price older than this prices an invoice
    url = "https://api.coingecko.com/api/v3"
    api_key = ""                    # sent as x-cg-demo-api-key when set
    static = { BTC = "65000" }      # overrides of the static table
    tickers = { USDT_ERC20 = "USDT" }   # a coin's asset at the exchanges (default: symbol before "_")
    coinbase = { url = "https://api.coinbase.com" }
    kraken = { url = "https://api.kraken.com" }

The coins' prices come from the coin registry: each chain plugin declares its coins' ``price_id`` (the
CoinGecko id; tokens price as their asset) and ``dev_price_usd`` (the static development price). No coin
is named here.
"""

from __future__ import annotations

from typing import Any, Iterable

from ...api import PRICES, ConfigError, PriceService, hookimpl
from .consensus import ConsensusPriceSource
from .settings import PLUGIN_NAME, PriceSettings, read_settings
from .sources import (COINBASE_URL, COINGECKO_URL, KRAKEN_URL, STATIC_FIAT_PER_USD, CoinbasePriceSource,
                      CoinGeckoPriceSource, KrakenPriceSource, StaticPriceSource)
from ...api import Gateway
from ...api.hooks import PriceSourceRegistry

__all__ = ["CoinGeckoPriceSource", "CoinbasePriceSource", "ConsensusPriceSource", "KrakenPriceSource",
           "STATIC_FIAT_PER_USD", "StaticPriceSource"]
DEFAULT_URL = COINGECKO_URL


def static_prices(coins: Iterable[Any]) -> dict[str, str]:
    """The development price of every registered coin that declares one."""
    return {coin.symbol: coin.dev_price_usd for coin in coins if coin.dev_price_usd is not None}


def price_ids(coins: Iterable[Any]) -> dict[str, str]:
    """The CoinGecko id of every registered coin that declares one."""
    return {coin.symbol: coin.price_id for coin in coins if coin.price_id}


def _settings(gateway: Any) -> PriceSettings:
    return read_settings(gateway.config.plugin_config(PLUGIN_NAME), development=gateway.config.is_development)


@hookimpl
def check_config(gateway: Gateway) -> None:
    _settings(gateway)


@hookimpl(trylast=True)
def register_price_sources(registry: PriceSourceRegistry, gateway: Gateway) -> None:
    # Last, so every other plugin's source is registered before the choice is checked.
    settings = _settings(gateway)
    block = gateway.config.plugin_config(PLUGIN_NAME)
    timeout = settings.timeout_seconds
    registry.add(StaticPriceSource(static_prices(gateway.coins), settings.static))
    registry.add(CoinGeckoPriceSource(price_ids(gateway.coins), block.get("url", COINGECKO_URL),
                                      block.get("api_key", ""), timeout,
                                      max_age_seconds=settings.max_age_seconds, clock=lambda: gateway.clock()))
    coinbase, kraken = settings.exchanges["coinbase"], settings.exchanges["kraken"]
    registry.add(CoinbasePriceSource(coinbase.get("url", COINBASE_URL), settings.tickers,
                                     float(coinbase.get("timeout_seconds", timeout))))
    registry.add(KrakenPriceSource(kraken.get("url", KRAKEN_URL), settings.tickers,
                                   float(kraken.get("timeout_seconds", timeout))))
    for chosen in settings.sources:
        if chosen not in registry:
            raise ConfigError(f"config key 'plugin.{PLUGIN_NAME}.source': no price source {chosen!r}"
                              f" (registered: {', '.join(sorted(registry.names()))})")


@hookimpl
def gateway_started(gateway: Gateway) -> None:
    settings = _settings(gateway)
    sources: list[Any] = [gateway.price_sources.get(name) for name in settings.sources]  # registered: see above
    if not sources:
        return  # production with no source named: nothing is priced rather than priced wrong
    source = sources[0] if len(sources) == 1 else ConsensusPriceSource(
        sources, min_sources=settings.min_sources, max_deviation_percent=settings.max_deviation_percent)
    # A cached price is never older than the bound: the cache lives at most max_age_seconds.
    gateway.services[PRICES] = PriceService(source, gateway.coins.names(), lambda: gateway.clock(),
                                              cache_seconds=min(60, settings.max_age_seconds))
