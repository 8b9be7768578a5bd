"""The ``[plugin.swaps]`` config block, read and validated in one place.

::

    [plugin.swaps]
    venue = "changenow"        # preferred venue when several convert a pair (default: the first registered)
    fallback_bps = 100         # auto-settle: a venue promising over 1 % less than the locked quote is refused
    create_timeout_seconds = 600  # a venue that cannot open the order by then: the swap fails, source credited back
    retry_seconds = 10         # how soon a step that met an unavailable venue is tried again
    [plugin.swaps.payout_addresses]   # where external venues send the target coin (the operator's wallets)
    ETH = "0x..."
    [plugin.swaps.refund_addresses]   # where they send a refund of the source coin
    BTC = "bc1q..."
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ...api import Config, ConfigError, checked_block

PLUGIN_NAME = "swaps"
KEYS = ("venue", "fallback_bps", "create_timeout_seconds", "retry_seconds", "payout_addresses", "refund_addresses")


@dataclass(frozen=True)
class SwapSettings:
    venue: str | None = None
    fallback_bps: int = 100
    create_timeout_seconds: int = 600
    retry_seconds: int = 10
    payout_addresses: Mapping[str, str] = field(default_factory=dict)
    refund_addresses: Mapping[str, str] = field(default_factory=dict)


def _key(name: str) -> str:
    return f"plugin.{PLUGIN_NAME}.{name}"


def _int(block: Mapping[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = block.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ConfigError(f"config key '{_key(name)}' must be an integer {low}-{high}")
    return value


def _addresses(block: Mapping[str, Any], name: str) -> dict[str, str]:
    table = block.get(name, {})
    if not isinstance(table, Mapping) or not all(isinstance(v, str) and v for v in table.values()):
        raise ConfigError(f"config key '{_key(name)}' must be a table of COIN = \"address\"")
    return {str(k).upper(): v for k, v in table.items()}


def read_settings(config: Config) -> SwapSettings:
    """The validated block; ``ConfigError`` names the bad key."""
    block = checked_block(config, PLUGIN_NAME, KEYS)
    venue = block.get("venue")
    if venue is not None and (not isinstance(venue, str) or not venue):
        raise ConfigError(f"config key '{_key('venue')}' must be a venue name")
    return SwapSettings(
        venue=venue,
        fallback_bps=_int(block, "fallback_bps", 100, 0, 5000),
        create_timeout_seconds=_int(block, "create_timeout_seconds", 600, 10, 86400),
        retry_seconds=_int(block, "retry_seconds", 10, 1, 3600),
        payout_addresses=_addresses(block, "payout_addresses"),
        refund_addresses=_addresses(block, "refund_addresses"),
    )
