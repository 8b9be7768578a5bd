"""Built-in plugin ``tron``: TRX and the pinned TRC-20 tokens over a full node's HTTP API.

It always registers the coins (with their pinned TRC-20 contracts and price
ids) and the ``tron`` address family (m/44'/195'/A'/0/I). With a ``url`` in
its block it also registers the ``tron`` chain adapter, which watches
deposits, sends payouts from the hot wallet (m/44'/195'/0'/0/0) and, with
``sweep`` on (the default), runs the job ``tron.sweep`` that moves credited
deposits to the hot wallet. ``orbchain tron hot-wallet`` prints the
address to fund and what it holds::

    [plugin.tron]
    url = "https://api.trongrid.io"
    api_key = "..."                        # TRON-PRO-API-KEY for hosted providers
    contracts = { USDT_TRC20 = "T..." }    # optional pin overrides

QR payloads and "Open in wallet" links are ``tron:<address>?amount=<TRX>``
for TRX and ``tron:<address>?amount=<tokens>&token=<TRC-20 contract>`` for a
token (the form Cake Wallet writes and reads; docs/decisions.md says which
wallets take what). See ``docs/tron.md``.
"""

from __future__ import annotations

from typing import Any, Mapping

from ...api import ConfigError, NETWORKS, hookimpl
from ..contracts import pin_contracts
from ..payment_uri import decimal_uri
from .adapter import TronAdapter
from .address import address_family
from .coins import COINS
from .settings import CHAIN, PLUGIN_NAME, TronSettings, read_settings
from .sweeper import sweep_chain, sweep_job
from ...api import AddressFamilyRegistry, Coin, CoinRegistry, Gateway
from ...api.hooks import ChainRegistry, CommandRegistry, JobRegistry, MigrationRegistry

__all__ = ["PLUGIN_NAME", "TronAdapter", "TronSettings", "sweep_chain", "tron_adapter"]

MIGRATIONS_PACKAGE = "orbchain.chains.tron.migrations"


def _settings(gateway) -> TronSettings:
    return read_settings(gateway.config.plugin_config(PLUGIN_NAME))


@hookimpl
def check_config(gateway: Gateway) -> None:
    _settings(gateway)


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_coins(registry: CoinRegistry, gateway: Gateway) -> None:
    for coin in COINS:
        registry.add(coin)
    pin_contracts(registry, _settings(gateway).contracts)


@hookimpl
def register_address_families(registry: AddressFamilyRegistry) -> None:
    for network in NETWORKS:
        registry.add(address_family(network))


@hookimpl
def register_chains(registry: ChainRegistry, gateway: Gateway) -> None:
    settings = _settings(gateway)
    if settings.url is None:
        return
    coins = [coin for coin in gateway.coins if coin.chain == CHAIN and coin.address_family == "tron"]
    natives = [coin.symbol for coin in coins if coin.contract is None]
    if len(natives) != 1:
        raise ConfigError(f"plugin.{PLUGIN_NAME}: the coin table has {len(natives)} native Tron coins, expected 1")
    registry.add(TronAdapter(gateway, settings, natives[0], {c.contract: c.symbol for c in coins if c.contract}))


def tron_adapter(gateway) -> TronAdapter | None:
    adapter = gateway.chains.get(CHAIN)
    return adapter if isinstance(adapter, TronAdapter) else None


@hookimpl
def decide_qr_payload(payment: Mapping[str, Any], coin: Coin) -> str | None:
    """``tron:<address>?amount=<TRX>``; a TRC-20 token adds ``token=<contract>``, so the URI names what to send.

    The amount is the coin's own decimal (tokens too: ``amount=30`` is 30 USDT), as Cake Wallet reads it.
    """
    if coin.chain != CHAIN or coin.address_family != "tron":
        return None
    return decimal_uri("tron", payment, coin, **({"token": coin.contract} if coin.contract else {}))


@hookimpl
def register_commands(registry: CommandRegistry) -> None:
    from .cli import configure

    registry.add("tron", "Tron: show the hot wallet to fund", configure)


@hookimpl
def register_jobs(registry: JobRegistry, gateway: Gateway) -> None:
    adapter = tron_adapter(gateway)
    if adapter is not None and adapter.settings.sweep:
        # It signs (the deposit keys, the hot wallet's top-ups): run by ``orbchain signer`` when one holds the seed.
        registry.add(f"{CHAIN}.sweep", sweep_job(adapter), seconds=adapter.settings.sweep_seconds, signs=True)
