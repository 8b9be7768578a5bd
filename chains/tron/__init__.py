"""Built-in plugin ``tron``: the TRX and TRC-20 coins and the ``tron`` address family.

It registers today only the coins (with their pinned TRC-20 contracts and
price ids) and the address family (derivation m/44'/195'/A'/0/I and
validation), so merchants can accept and validate Tron coins; the chain
adapter that watches and pays on Tron is built by a later issue, and until
then no chain serves these coins outside the devnet. An operator replaces a
pinned contract with::

    [plugin.tron]
    contracts = { USDT_TRC20 = "T..." }
"""

from __future__ import annotations

from ...core.config import ConfigError
from ...core.keys import NETWORKS
from ...core.plugins import hookimpl
from ..contracts import pin_contracts, read_contracts
from .address import address_family
from .coins import COINS

PLUGIN_NAME = "tron"


def _contracts(gateway) -> dict[str, str]:
    block = gateway.config.plugin_config(PLUGIN_NAME)
    for key in block:
        if key != "contracts":
            raise ConfigError(f"unknown config key 'plugin.{PLUGIN_NAME}.{key}' (known: contracts)")
    return read_contracts(block, f"plugin.{PLUGIN_NAME}", COINS)


@hookimpl
def validate_config(gateway) -> None:
    _contracts(gateway)


@hookimpl
def register_coins(registry, gateway) -> None:
    for coin in COINS:
        registry.add(coin)
    pin_contracts(registry, _contracts(gateway))


@hookimpl
def register_address_families(registry) -> None:
    for network in NETWORKS:
        registry.add(address_family(network))
