"""The operator's override of pinned token contracts, shared by chain plugins.

Why: the coin tables pin mainnet contracts; on a test network (or after a
token migration) the operator replaces a pin in the owning plugin's block,
``contracts = { SYMBOL = "address" }``. Only tokens of that plugin (and,
for EVM, of that chain) may be named, so a typo stops startup instead of
silently leaving the mainnet contract in place.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..api import Coin, CoinRegistry, ConfigError


def read_contracts(block: Mapping[str, Any], prefix: str, coins: Iterable[Coin]) -> dict[str, str]:
    """``{symbol: contract}`` from ``block["contracts"]``; errors name ``prefix.contracts``."""
    contracts = block.get("contracts", {})
    if not isinstance(contracts, Mapping) or not all(isinstance(v, str) and v for v in contracts.values()):
        raise ConfigError(f"config key '{prefix}.contracts' must map coin symbols to contract addresses")
    tokens = {coin.symbol for coin in coins if coin.contract}
    for symbol in contracts:
        if symbol not in tokens:
            raise ConfigError(f"config key '{prefix}.contracts.{symbol}': not a token of this chain "
                              f"(tokens: {', '.join(sorted(tokens))})")
    return dict(contracts)


def pin_contracts(registry: CoinRegistry, contracts: Mapping[str, str]) -> None:
    for symbol, contract in contracts.items():
        registry.pin_contract(symbol, contract)
