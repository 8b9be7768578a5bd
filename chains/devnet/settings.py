"""The ``[plugin.devnet]`` config block, read and validated in one place.

``enabled`` defaults to the environment: a chain that credits fake money
runs in development unless switched off, and never in production unless
the operator writes ``enabled = true`` there.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.coins import Coin, CoinRegistry
from ...core.config import Config, ConfigError, seconds_setting

PLUGIN_NAME = "devnet"
KEYS = ("enabled", "block_seconds", "scan_seconds", "coins")
DEFAULT_BLOCK_SECONDS = 3.0
DEFAULT_SCAN_SECONDS = 1.0
# Monero and Lightning have no block/output model the devnet could imitate.
UNSIMULATED_FAMILIES = frozenset({"xmr", "lightning"})


@dataclass(frozen=True)
class DevnetSettings:
    enabled: bool
    block_seconds: float
    scan_seconds: float
    coins: tuple[str, ...] | None  # None: every simulable coin


def _key(name: str | None = None) -> str:
    return f"plugin.{PLUGIN_NAME}" + (f".{name}" if name else "")


def read_settings(config: Config) -> DevnetSettings:
    """The validated block; raises ``ConfigError`` naming the bad key."""
    block = dict(config.plugin_config(PLUGIN_NAME))
    for name in block:
        if name not in KEYS:
            raise ConfigError(f"unknown config key '{_key(name)}' (known: {', '.join(KEYS)})")
    enabled = block.get("enabled", config.is_development)
    if not isinstance(enabled, bool):
        raise ConfigError(f"config key '{_key('enabled')}' must be true or false, got {enabled!r}")
    coins = block.get("coins")
    if coins is not None:
        if not isinstance(coins, (list, tuple)) or not coins or not all(isinstance(c, str) and c for c in coins):
            raise ConfigError(f"config key '{_key('coins')}' must be a non-empty list of coin symbols")
        coins = tuple(dict.fromkeys(coins))
    return DevnetSettings(
        enabled=enabled,
        block_seconds=seconds_setting(block, _key(), "block_seconds", DEFAULT_BLOCK_SECONDS),
        scan_seconds=seconds_setting(block, _key(), "scan_seconds", DEFAULT_SCAN_SECONDS),
        coins=coins,
    )


def simulable(coin: Coin) -> bool:
    return coin.receivable and coin.address_family not in UNSIMULATED_FAMILIES


def served_coins(settings: DevnetSettings, registry: CoinRegistry) -> tuple[str, ...]:
    """The coin symbols the devnet simulates; a bad ``coins`` entry is a ``ConfigError``."""
    if settings.coins is None:
        return tuple(coin.symbol for coin in registry if simulable(coin))
    for symbol in settings.coins:
        coin = registry.get(symbol)
        if coin is None:
            raise ConfigError(f"config key '{_key('coins')}': unknown coin {symbol!r}")
        if not simulable(coin):
            raise ConfigError(f"config key '{_key('coins')}': the devnet cannot simulate {symbol}")
    return settings.coins
