"""Built-in plugin ``monero``: XMR (source-only), its address family, and view-only payment detection.

The coin and the validate-only ``xmr`` family are always registered. With a
``[plugin.monero]`` block (``settings.py``) the plugin also adds the
``monero`` chain adapter (``adapter.py``: monerod for blocks, a view-only or
full monero-wallet-rpc wallet for what is ours), gives each XMR payment its
own subaddress (``decide_receive_target``, the address watched through
``ReceiveTarget.watch_index``), and credits confirmed XMR into the swap-in
account, holding the deposit CONFIRMED for the converter (``swapin.py``).
XMR never becomes a merchant balance, and a standing receive address for
XMR stays 400 ``xmr_receive_unsupported`` (the coin has
``receive_address=False``).
"""

from __future__ import annotations

from typing import Any, Mapping

from ...api import NETWORKS, ReceiveTarget, hookimpl
from . import swapin
from .adapter import CHAIN, MoneroAdapter
from .address import address_family
from .coins import COINS
from .settings import PLUGIN_NAME, read_settings
from ...api import AddressFamilyRegistry, Coin, CoinRegistry, Credit, DepositView, Gateway, Posting
from ...api.hooks import ChainRegistry, MigrationRegistry

MIGRATIONS_PACKAGE = "orbchain.chains.monero.migrations"

__all__ = ["PLUGIN_NAME", "MoneroAdapter", "swapin"]


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
        registry.add(address_family(network))


@hookimpl
def register_chains(registry: ChainRegistry, gateway: Gateway) -> None:
    settings = read_settings(gateway.config)
    if settings is not None:
        registry.add(MoneroAdapter(settings))


@hookimpl
async def decide_receive_target(gateway: Gateway, payment: Mapping[str, Any], coin: Coin) -> ReceiveTarget | None:
    """A fresh subaddress of our wallet for each XMR payment, watched like a derived address."""
    adapter = gateway.chains.get(CHAIN)
    if adapter is None or not adapter.serves(coin.symbol):
        return None
    address, index = await adapter.create_subaddress(label=payment["track_id"])
    return ReceiveTarget(address, watch_index=index)


@hookimpl
def decide_qr_payload(payment: Mapping[str, Any], coin: Coin) -> str | None:
    """A Monero payment URI (``monero:<address>?tx_amount=<XMR>``) for XMR payments."""
    if coin.chain != CHAIN or not payment.get("address"):
        return None
    amount = payment.get("pay_amount")
    return f"monero:{payment['address']}" + (f"?tx_amount={amount}" if amount else "")


@hookimpl
async def filter_credit_postings(gateway: Gateway, credit: Credit, postings: list[Posting]) -> list[Posting] | None:
    return await swapin.swap_in_postings(gateway, credit, postings)


@hookimpl
def decide_credit_status(credit: Credit) -> str | None:
    return swapin.credit_status(credit)


@hookimpl
async def deposit_reversed(gateway: Gateway, deposit: DepositView) -> None:
    if deposit.chain == CHAIN:
        await swapin.mark_reversed(gateway, deposit.id)
