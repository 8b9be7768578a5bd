"""Built-in plugin ``bitcoin``: BTC, LTC and DOGE through Bitcoin Core JSON-RPC.

Each coin is enabled by its own block (``[plugin.bitcoin.BTC]``,
``[plugin.bitcoin.LTC]``, ``[plugin.bitcoin.DOGE]``; see ``settings.py`` and
``docs/bitcoin.md``) and becomes one chain adapter named after the coin's
chain ("bitcoin", "litecoin", "dogecoin") that watches deposits and signs
payouts from the gateway's own keys. The node's wallet is never used.

The plugin owns its coins (``coins.py``: symbols, floors, price ids), their
address families (``families.py``) and their QR payloads (BIP-21 URIs:
``bitcoin:``, ``litecoin:``, ``dogecoin:`` with the amount).
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from ...api import ConfigError, NETWORKS, hookimpl, hot_wallet_limits
from .adapter import BitcoinAdapter
from .cold_sweep import cold_sweep_job
from .consolidation import consolidate_job
from ..payment_uri import decimal_uri
from .coins import COINS, URI_SCHEMES
from .families import address_families
from .settings import COIN_SPECS, PLUGIN_NAME, read_settings
from ...api import AddressFamilyRegistry, Coin, CoinRegistry, Gateway, PayoutView
from ...api.hooks import ChainRegistry, JobRegistry, MigrationRegistry

__all__ = ["PLUGIN_NAME", "BitcoinAdapter"]

log = logging.getLogger(__name__)

MIGRATIONS_PACKAGE = "orbchain.chains.bitcoin.migrations"
SYMBOLS = frozenset(coin.symbol for coin in COINS)
COLD_SWEEP_SECONDS = 60


@hookimpl
def check_config(gateway: Gateway) -> None:
    read_settings(gateway.config)


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_coins(registry: CoinRegistry) -> None:
    for coin in COINS:
        registry.add(coin)


@hookimpl
def register_address_families(registry: AddressFamilyRegistry) -> None:
    for network in NETWORKS:
        for family in address_families(network):
            registry.add(family)


@hookimpl
def decide_qr_payload(payment: Mapping[str, Any], coin: Coin) -> str | None:
    """A BIP-21 URI (``bitcoin:<address>?amount=<BTC>``, LTC and DOGE alike) for our coins."""
    scheme = URI_SCHEMES.get(coin.chain) if coin.symbol in SYMBOLS else None
    return None if scheme is None else decimal_uri(scheme, payment, coin)


@hookimpl
def register_chains(registry: ChainRegistry, gateway: Gateway) -> None:
    for symbol, settings in read_settings(gateway.config).items():
        coin = gateway.coins.get(symbol)
        if coin is None or coin.chain != COIN_SPECS[symbol].chain:
            raise ConfigError(f"config block 'plugin.{PLUGIN_NAME}.{symbol}': coin {symbol} is not in the coin table"
                              f" on chain {COIN_SPECS[symbol].chain!r}")
        registry.add(BitcoinAdapter(gateway, settings))


@hookimpl
def register_jobs(registry: JobRegistry, gateway: Gateway) -> None:
    """Per chain: a cold sweep job when its coin has a ceiling (``[custody.hot_wallet.<COIN>]``, ``cold_sweep.py``),
    a consolidation job when ``consolidate_min_outputs`` is set (``consolidation.py``); both sign."""
    limits = hot_wallet_limits(gateway)
    for adapter in gateway.chains:
        if not isinstance(adapter, BitcoinAdapter):
            continue
        if getattr(limits.get(adapter.coin), "ceiling", None) is not None:
            registry.add(f"bitcoin.{adapter.name}.cold_sweep", cold_sweep_job(adapter), seconds=COLD_SWEEP_SECONDS,
                         signs=True)
        if adapter.settings.consolidate_min_outputs:
            registry.add(f"bitcoin.{adapter.name}.consolidate", consolidate_job(adapter),
                         seconds=adapter.settings.consolidate_seconds, signs=True)


@hookimpl
async def payout_finished(gateway: Gateway, payout: PayoutView) -> None:
    """A failed payout of ours gives its reserved outputs back; a confirmed one spends them."""
    adapter = gateway.chains.get(payout.get("chain", ""))
    if not isinstance(adapter, BitcoinAdapter):
        return
    try:
        if payout.get("status") == "Failed":
            await adapter.release_payout(payout["id"])
    except Exception:  # the next sign_payout releases what this missed
        log.exception("%s: releasing the inputs of payout %s failed", adapter.name, payout.get("id"))
