"""Built-in plugin ``devnet_venue``: a simulated swap venue for ``make run`` and tests.

Registered through ``register_swap_venues`` (the hook the ``swaps`` plugin
declares) like any exchange plugin. On by
default in development, off in production unless enabled. Config block (all
optional)::

    [plugin.devnet_venue]
    enabled = true
    fee_bps = 50                  # the venue's fee, taken from what it delivers
    delay_seconds = 0             # an order finishes this long after creation
    short_bps = 0                 # delivers this much less than it promised
    rates = { "BTC/ETH" = "20" }  # overrides; default: the coins' development prices

Tests change the knobs of the live instance:
``orbchain.plugins.swaps.venue_registry.venues_of(gateway)["devnet"].knobs``.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from ...api import Config, ConfigError, checked_block, hookimpl
from .venue import DevnetVenue, Knobs
from ...api import Gateway

PLUGIN_NAME = "devnet_venue"
KEYS = ("enabled", "fee_bps", "delay_seconds", "short_bps", "rates")

__all__ = ["DevnetVenue", "Knobs", "PLUGIN_NAME"]


def _bps(block: dict[str, Any], name: str, default: int) -> int:
    value = block.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 10000:
        raise ConfigError(f"config key 'plugin.{PLUGIN_NAME}.{name}' must be an integer 0-9999")
    return value


def read_settings(config: Config) -> tuple[bool, Knobs]:
    """(enabled, knobs) from ``[plugin.devnet_venue]``; ``ConfigError`` names a bad key."""
    block = checked_block(config, PLUGIN_NAME, KEYS)
    enabled = block.get("enabled", config.is_development)
    if not isinstance(enabled, bool):
        raise ConfigError(f"config key 'plugin.{PLUGIN_NAME}.enabled' must be true or false")
    delay = block.get("delay_seconds", 0)
    if not isinstance(delay, int) or isinstance(delay, bool) or delay < 0:
        raise ConfigError(f"config key 'plugin.{PLUGIN_NAME}.delay_seconds' must be a non-negative integer")
    rates: dict[str, Decimal] = {}
    raw_rates = block.get("rates", {})
    if not isinstance(raw_rates, dict):
        raise ConfigError(f"config key 'plugin.{PLUGIN_NAME}.rates' must be a table of \"FROM/TO\" = \"rate\"")
    for pair, text in raw_rates.items():
        try:
            rate = Decimal(str(text))
        except InvalidOperation:
            rate = Decimal(0)
        if "/" not in pair or not rate.is_finite() or rate <= 0 or isinstance(text, float):
            raise ConfigError(f"config key 'plugin.{PLUGIN_NAME}.rates.{pair}' must be a positive decimal string")
        rates[pair.upper()] = rate
    return enabled, Knobs(rates=rates, fee_bps=_bps(block, "fee_bps", 50), delay_seconds=delay,
                          short_bps=_bps(block, "short_bps", 0))


@hookimpl
def check_config(gateway: Gateway) -> None:
    read_settings(gateway.config)


@hookimpl(optionalhook=True)  # declared by the swaps plugin: without it, no venue is asked for
def register_swap_venues(registry, gateway: Gateway) -> None:
    enabled, knobs = read_settings(gateway.config)
    if enabled:
        registry.add(DevnetVenue(gateway.coins, gateway.now, knobs))
