"""Built-in plugin: registers the coin table of SPEC 2.7.

A plugin like any other, so an operator can block it and ship a different
table, and third-party chain packages add coins through the same hook.
Pinned token contracts can be overridden per coin with
``[plugin.coin_table] contracts = { USDT_ERC20 = "0x..." }`` (test networks).
"""

from __future__ import annotations

from ..core.coins import SPEC_COINS, CoinRegistry, register_all
from ..core.config import ConfigError
from ..core.plugins import hookimpl

PLUGIN_NAME = "coin_table"


@hookimpl
def validate_config(gateway) -> None:
    block = gateway.config.plugin_config(PLUGIN_NAME)
    unknown = set(block) - {"contracts"}
    if unknown:
        raise ConfigError(f"unknown config key 'plugin.{PLUGIN_NAME}.{sorted(unknown)[0]}'")
    contracts = block.get("contracts", {})
    if not isinstance(contracts, dict) or not all(isinstance(v, str) for v in contracts.values()):
        raise ConfigError(f"config key 'plugin.{PLUGIN_NAME}.contracts' must map coin symbols to addresses")
    tokens = {coin.symbol for coin in SPEC_COINS if coin.contract}
    for symbol in contracts:
        if symbol not in tokens:
            raise ConfigError(f"config key 'plugin.{PLUGIN_NAME}.contracts.{symbol}': not a token of the coin table")


@hookimpl
def register_coins(registry: CoinRegistry, gateway) -> None:
    register_all(registry, SPEC_COINS)
    for symbol, contract in gateway.config.plugin_config(PLUGIN_NAME).get("contracts", {}).items():
        registry.pin_contract(symbol, contract)
