"""The dashboard's config block, ``[plugin.dashboard]``, checked at startup."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ...api import ConfigError
from ...api import ServiceKey
from .explorers import parse_explorer_urls

PLUGIN_NAME = "dashboard"
DEFAULT_IDLE_MINUTES = 30
_KEYS = {"idle_minutes", "explorer_urls"}


@dataclass(frozen=True)
class DashboardSettings:
    idle_seconds: int = DEFAULT_IDLE_MINUTES * 60
    # Chain or coin name -> a transaction page's URL with one ``{txid}`` (explorers.py); none: no links.
    explorer_urls: Mapping[str, str] = field(default_factory=dict)


def parse_settings(block: Mapping[str, Any]) -> DashboardSettings:
    """``idle_minutes`` (1-1440, default 30): a browser session unused this long signs out; ``explorer_urls``
    (a table, default empty): the block explorer a payment's transactions link to, per chain or coin."""
    unknown = set(block) - _KEYS
    if unknown:
        raise ConfigError(f"unknown config key 'plugin.dashboard.{sorted(unknown)[0]}'")
    minutes = block.get("idle_minutes", DEFAULT_IDLE_MINUTES)
    if isinstance(minutes, bool) or not isinstance(minutes, int) or not 1 <= minutes <= 1440:
        raise ConfigError("config key 'plugin.dashboard.idle_minutes' must be an integer from 1 to 1440")
    return DashboardSettings(idle_seconds=minutes * 60,
                             explorer_urls=parse_explorer_urls(block.get("explorer_urls", {})))


_SETTINGS = ServiceKey("dashboard.settings", DashboardSettings)


def settings_of(gateway: Any) -> DashboardSettings:
    cached = gateway.services.get(_SETTINGS)
    if cached is None:
        cached = gateway.services[_SETTINGS] = parse_settings(gateway.config.plugin_config(PLUGIN_NAME))
    return cached
