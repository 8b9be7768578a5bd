"""Built-in plugin ``bitcoin``: BTC, LTC and DOGE through Bitcoin Core JSON-RPC.

Each coin is enabled by its own block (``[plugin.bitcoin.BTC]``,
``[plugin.bitcoin.LTC]``, ``[plugin.bitcoin.DOGE]``; see ``settings.py`` and
``docs/bitcoin.md``) and becomes one chain adapter named after the coin's
chain ("bitcoin", "litecoin", "dogecoin") that watches deposits and signs
payouts from the gateway's own keys. The node's wallet is never used.
"""

from __future__ import annotations

import logging

from ...core.config import ConfigError
from ...core.plugins import hookimpl
from .adapter import BitcoinAdapter
from .settings import COIN_SPECS, PLUGIN_NAME, read_settings

__all__ = ["PLUGIN_NAME", "BitcoinAdapter"]

log = logging.getLogger(__name__)

MIGRATIONS_PACKAGE = "orbchain.chains.bitcoin.migrations"


@hookimpl
def validate_config(gateway) -> None:
    read_settings(gateway.config)


@hookimpl
def register_migrations(registry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_chains(registry, gateway) -> None:
    for symbol, settings in read_settings(gateway.config).items():
        coin = gateway.coins.get(symbol)
        if coin is None or coin.chain != COIN_SPECS[symbol].chain:
            raise ConfigError(f"config block 'plugin.{PLUGIN_NAME}.{symbol}': coin {symbol} is not in the coin table"
                              f" on chain {COIN_SPECS[symbol].chain!r}")
        registry.add(BitcoinAdapter(gateway, settings))


@hookimpl
async def payout_finished(gateway, payout) -> None:
    """A failed payout of ours gives its reserved outputs back; a confirmed one spends them."""
    adapter = gateway.chains.get(payout.get("chain", ""))
    if not isinstance(adapter, BitcoinAdapter):
        return
    try:
        if payout.get("status") == "Failed":
            await adapter.release_payout(payout["id"])
    except Exception:  # noqa: BLE001 - the next sign_payout releases what this missed
        log.exception("%s: releasing the inputs of payout %s failed", adapter.name, payout.get("id"))
