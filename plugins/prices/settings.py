"""The ``[plugin.prices]`` block read once: which sources, how many must agree, how far apart and how old."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Mapping

from ...api import ConfigError

PLUGIN_NAME = "prices"
KEYS = frozenset({"source", "sources", "min_sources", "max_deviation_percent", "max_age_seconds", "url", "api_key",
                  "static", "tickers", "timeout_seconds", "coinbase", "kraken"})
EXCHANGE_KEYS = frozenset({"url", "timeout_seconds"})
DEFAULT_MAX_DEVIATION_PERCENT = Decimal(2)
DEFAULT_MAX_AGE_SECONDS = 300
DEVELOPMENT_SOURCE = "static"


def _key(name: str) -> str:
    return f"config key 'plugin.{PLUGIN_NAME}.{name}'"


@dataclass(frozen=True)
class PriceSettings:
    """``sources`` empty: no price service (production without a source named)."""

    sources: tuple[str, ...]
    min_sources: int
    max_deviation_percent: Decimal
    max_age_seconds: int
    timeout_seconds: float
    static: Mapping[str, str] = field(default_factory=dict)
    tickers: Mapping[str, str] = field(default_factory=dict)
    exchanges: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def _names(block: Mapping[str, Any], development: bool) -> tuple[str, ...]:
    if "source" in block and "sources" in block:
        raise ConfigError(f"{_key('source')} and {_key('sources')}: set one of them")
    if "sources" in block:
        names = block["sources"]
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise ConfigError(f"{_key('sources')} must be a non-empty list of price source names")
        if len(set(names)) != len(names):
            raise ConfigError(f"{_key('sources')} names a source twice")
        return tuple(names)
    if "source" in block:
        if not isinstance(block["source"], str) or not block["source"]:
            raise ConfigError(f"{_key('source')} must name a price source")
        return (block["source"],)
    return (DEVELOPMENT_SOURCE,) if development else ()


def _positive_int(block: Mapping[str, Any], name: str, default: int) -> int:
    value = block.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{_key(name)} must be an integer of at least 1")
    return value


def _table(block: Mapping[str, Any], name: str) -> dict[str, str]:
    table = block.get(name, {})
    if not isinstance(table, Mapping) or not all(isinstance(v, str) and v for v in table.values()):
        raise ConfigError(f"{_key(name)} must be a table of strings")
    return dict(table)


def read_settings(block: Mapping[str, Any], *, development: bool) -> PriceSettings:
    """Every key checked; ``ConfigError`` names the one that is wrong."""
    for key in block:
        if key not in KEYS:
            raise ConfigError(f"unknown config key 'plugin.{PLUGIN_NAME}.{key}'")
    names = _names(block, development)
    if DEVELOPMENT_SOURCE in names and not development:
        raise ConfigError(f"{_key('sources' if 'sources' in block else 'source')}: the static development prices"
                          f" cannot price real payments in production; name live sources, e.g."
                          f' sources = ["coingecko", "coinbase", "kraken"]')
    min_sources = _positive_int(block, "min_sources", len(names) // 2 + 1)
    if names and min_sources > len(names):
        raise ConfigError(f"{_key('min_sources')} is {min_sources} but only {len(names)} sources are named")
    try:
        deviation = Decimal(str(block.get("max_deviation_percent", DEFAULT_MAX_DEVIATION_PERCENT)))
    except InvalidOperation:
        deviation = Decimal(-1)
    if not deviation.is_finite() or deviation <= 0 or isinstance(block.get("max_deviation_percent"), float):
        raise ConfigError(f"{_key('max_deviation_percent')} must be a positive decimal string, e.g. \"2\"")
    timeout = block.get("timeout_seconds", 10)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ConfigError(f"{_key('timeout_seconds')} must be a positive number")
    static = _table(block, "static")
    for symbol, value in static.items():
        try:
            Decimal(value)
        except InvalidOperation:
            raise ConfigError(f"{_key(f'static.{symbol}')} must be a decimal string") from None
    exchanges = {}
    for exchange in ("coinbase", "kraken"):
        sub = block.get(exchange, {})
        if not isinstance(sub, Mapping) or any(k not in EXCHANGE_KEYS for k in sub):
            raise ConfigError(f"{_key(exchange)} takes only {', '.join(sorted(EXCHANGE_KEYS))}")
        exchanges[exchange] = dict(sub)
    return PriceSettings(names, min_sources, deviation, _positive_int(block, "max_age_seconds",
                                                                      DEFAULT_MAX_AGE_SECONDS),
                         float(timeout), static, _table(block, "tickers"), exchanges)
