"""The ``zed`` plugin: its coin, its address family and its chain, registered through the contract's hooks.

Config block (all optional)::

    [plugin.zed]
    network = "mainnet"   # the key layer's network for ZED addresses
    payout_fee = 1000     # base units the platform pays per payout

Installed through the ``orbchain`` entry-point group (``zed =
zed_orbchain.plugin``; the tests install it with ``install_plugin``).
"""

from __future__ import annotations

from orbchain.api import NETWORKS, Coin, ConfigError, checked_block, hookimpl, int_setting, text_setting

from . import address
from .adapter import CHAIN, COIN, ZedAdapter
from .node import ZedNode

ORBCHAIN_REQUIRES = ">=0.1,<1"
NAME = "zed"
KNOWN = ("network", "payout_fee")
DEFAULT_PAYOUT_FEE = 1000


def settings(gateway) -> tuple[str, int]:
    """``(network, payout_fee)`` from ``[plugin.zed]``; ``ConfigError`` naming a bad key."""
    block = checked_block(gateway.config, NAME, KNOWN)
    network = text_setting(block, f"plugin.{NAME}", "network") or "mainnet"
    if network not in NETWORKS:
        raise ConfigError(f"config key 'plugin.{NAME}.network' must be one of {', '.join(NETWORKS)}")
    return network, int_setting(block, f"plugin.{NAME}", "payout_fee", DEFAULT_PAYOUT_FEE)


@hookimpl
def check_config(gateway):
    settings(gateway)


@hookimpl
def register_coins(registry):
    registry.add(Coin(COIN, "Zed", CHAIN, 6, 3, "0.01", address.FAMILY, dev_price_usd="2", default_accepted=True))


@hookimpl
def register_address_families(registry):
    for family in address.families():
        registry.add(family)


@hookimpl
def register_chains(registry, gateway):
    network, payout_fee = settings(gateway)
    registry.add(ZedAdapter(gateway, ZedNode(), network, payout_fee))


@hookimpl
def decide_qr_payload(payment, coin):
    if coin.symbol == COIN and payment.get("address"):
        return f"zed:{payment['address']}?amount={payment['pay_amount']}"
    return None
