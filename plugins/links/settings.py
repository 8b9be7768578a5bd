"""The ``[plugin.links]`` block, checked once at startup.

``mint_per_minute`` bounds how many invoices one client IP can mint through
payment links per minute (all links together), on top of the 60 requests
per minute every public page has. 0 turns the bound off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ...core.config import ConfigError

PLUGIN_NAME = "links"
DEFAULT_MINT_PER_MINUTE = 10
MAX_MINT_PER_MINUTE = 10_000
_KEYS = {"mint_per_minute"}


@dataclass(frozen=True)
class LinkSettings:
    mint_per_minute: int = DEFAULT_MINT_PER_MINUTE


def parse_settings(block: Mapping[str, Any], plugin: str = PLUGIN_NAME) -> LinkSettings:
    """The settings of ``block``, or ``ConfigError`` naming the bad key (a typo is never ignored)."""
    unknown = sorted(set(block) - _KEYS)
    if unknown:
        raise ConfigError(f"unknown config key 'plugin.{plugin}.{unknown[0]}' (known: {', '.join(sorted(_KEYS))})")
    value = block.get("mint_per_minute", DEFAULT_MINT_PER_MINUTE)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_MINT_PER_MINUTE:
        raise ConfigError(f"config key 'plugin.{plugin}.mint_per_minute' must be an integer from 0 to "
                          f"{MAX_MINT_PER_MINUTE}")
    return LinkSettings(value)


def settings_of(gateway: Any, plugin: str = PLUGIN_NAME) -> LinkSettings:
    """The parsed block, cached on the gateway (parsed once, at ``validate_config``)."""
    key = f"{plugin}.settings"
    cached = gateway.services.get(key)
    if cached is None:
        cached = gateway.services[key] = parse_settings(gateway.config.plugin_config(plugin), plugin)
    return cached
