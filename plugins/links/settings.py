"""The ``[plugin.links]`` block (and ``[plugin.tips]``, the same keys), checked once at startup.

``mint_per_minute`` bounds how many invoices one client IP can mint through
payment links per minute (all links together), on top of the 60 requests
per minute every public page has. 0 turns the bound off.

``unpaid_retention_days`` (7-3650, default 30): a minted invoice left unpaid
is deleted this many days after it expired (the core's prune job; its
deposit address stays watched). At least 7: the core's catch-up after
downtime still looks at payments that expired within the last 7 days.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ...api import ConfigError
from ...api import ServiceKey

PLUGIN_NAME = "links"
DEFAULT_MINT_PER_MINUTE = 10
MAX_MINT_PER_MINUTE = 10_000
DEFAULT_RETENTION_DAYS = 30
MIN_RETENTION_DAYS, MAX_RETENTION_DAYS = 7, 3650
DAY = 86400
_KEYS = {"mint_per_minute", "unpaid_retention_days"}


@dataclass(frozen=True)
class LinkSettings:
    mint_per_minute: int = DEFAULT_MINT_PER_MINUTE
    unpaid_retention_days: int = DEFAULT_RETENTION_DAYS

    @property
    def unpaid_retention_seconds(self) -> int:
        return self.unpaid_retention_days * DAY


def _integer(block: Mapping[str, Any], plugin: str, name: str, default: int, low: int, high: int) -> int:
    value = block.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"config key 'plugin.{plugin}.{name}' must be an integer from {low} to {high}")
    return value


def parse_settings(block: Mapping[str, Any], plugin: str = PLUGIN_NAME) -> LinkSettings:
    """The settings of ``block``, or ``ConfigError`` naming the bad key (a typo is never ignored)."""
    unknown = sorted(set(block) - _KEYS)
    if unknown:
        raise ConfigError(f"unknown config key 'plugin.{plugin}.{unknown[0]}' (known: {', '.join(sorted(_KEYS))})")
    return LinkSettings(
        _integer(block, plugin, "mint_per_minute", DEFAULT_MINT_PER_MINUTE, 0, MAX_MINT_PER_MINUTE),
        _integer(block, plugin, "unpaid_retention_days", DEFAULT_RETENTION_DAYS, MIN_RETENTION_DAYS,
                 MAX_RETENTION_DAYS))


def settings_of(gateway: Any, plugin: str = PLUGIN_NAME) -> LinkSettings:
    """The parsed block, cached on the gateway (parsed once, at ``check_config``)."""
    key = ServiceKey(f"{plugin}.settings", LinkSettings)
    cached = gateway.services.get(key)
    if cached is None:
        cached = gateway.services[key] = parse_settings(gateway.config.plugin_config(plugin), plugin)
    return cached
