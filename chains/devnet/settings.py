"""The ``[plugin.devnet]`` config block, read and validated in one place.

``enabled`` defaults to the environment: a chain that credits fake money
runs in development unless switched off, and never in production unless
the operator writes ``enabled = true`` there.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...api import AddressFamilyRegistry, Coin, CoinRegistry, Config, ConfigError, checked_block, seconds_setting
from .chain import NETWORK

PLUGIN_NAME = "devnet"
KEYS = ("enabled", "block_seconds", "scan_seconds", "coins")
DEFAULT_BLOCK_SECONDS = 3.0
DEFAULT_SCAN_SECONDS = 1.0


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
    block = checked_block(config, PLUGIN_NAME, KEYS)
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


def simulable(coin: Coin, families: AddressFamilyRegistry) -> bool:
    """Whatever registered coin has an address the gateway derives: the devnet
    imitates a chain of outputs paid to derived addresses, so source-only coins
    and validate-only families (invoices issued by a node) are left out."""
    if not coin.receivable or not coin.receive_address:
        return False
    family = families.find(coin.address_family, NETWORK)
    return family is not None and family.derivable


def served_coins(settings: DevnetSettings, registry: CoinRegistry, families: AddressFamilyRegistry) -> tuple[str, ...]:
    """The coin symbols the devnet simulates; a bad ``coins`` entry is a ``ConfigError``."""
    if settings.coins is None:
        return tuple(coin.symbol for coin in registry if simulable(coin, families))
    for symbol in settings.coins:
        coin = registry.get(symbol)
        if coin is None:
            raise ConfigError(f"config key '{_key('coins')}': unknown coin {symbol!r}")
        if not simulable(coin, families):
            raise ConfigError(f"config key '{_key('coins')}': the devnet cannot simulate {symbol}")
    return settings.coins
