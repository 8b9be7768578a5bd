"""Built-in plugin ``evm``: ETH, BNB, POL and their tokens over standard Ethereum JSON-RPC.

One adapter per EVM chain the operator configures; a chain without a block
registers nothing::

    [plugin.evm.ethereum]
    rpc_url = "http://127.0.0.1:8545"
    chain_id = 1

    [plugin.evm.bsc]
    rpc_url = "https://bsc-node.internal:8545"
    chain_id = 56

The plugin owns its coins (``coins.py``: ETH, BNB, POL and their tokens with
pinned contracts and price ids) and the ``evm`` address family. A chain's
adapter serves the registered coins of that chain: its native coin (no
contract) and the tokens pinned to it, whose contracts an operator may
override with ``contracts = { SYMBOL = "0x..." }`` in the chain's block. QR
payloads and "Open in wallet" links are EIP-681 URIs with the configured
``chain_id``, or the chain's published id (``coins.CHAIN_IDS``) where no
block names one (the devnet serves these coins): never a URI without a chain
id, which could pay on the wrong chain. Each adapter also sends
payouts from the hot wallet, and a job ``evm.<chain>.sweep`` moves credited
deposits to it. See ``docs/evm.md``.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from ...api import ConfigError, NETWORKS, hookimpl, hot_wallet_limits
from ..contracts import pin_contracts
from ..payment_uri import eip681_uri
from .adapter import EvmAdapter
from .address import address_family
from .coins import CHAIN_IDS, COINS, FAMILY
from .settings import PLUGIN_NAME, ChainSettings, read_settings
from .cold_sweep import cold_sweep_job
from .sweeper import sweep_chain, sweep_job
from ...api import AddressFamilyRegistry, Coin, CoinRegistry, Gateway, PayoutView
from ...api.hooks import ChainRegistry, CommandRegistry, JobRegistry, MigrationRegistry

log = logging.getLogger(__name__)

__all__ = ["PLUGIN_NAME", "EvmAdapter", "ChainSettings", "sweep_chain", "evm_adapters"]

MIGRATIONS_PACKAGE = "orbchain.chains.evm.migrations"
COLD_SWEEP_SECONDS = 60


@hookimpl
def check_config(gateway: Gateway) -> None:
    if gateway.config.plugin_config("coin_table"):
        # The coin table became the chain plugins' own; an ignored override would leave mainnet pins.
        raise ConfigError("config block 'plugin.coin_table' was removed: pin token contracts with"
                          f" 'plugin.{PLUGIN_NAME}.<chain>.contracts' or 'plugin.tron.contracts'")
    read_settings(gateway.config.plugin_config(PLUGIN_NAME))


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_coins(registry: CoinRegistry, gateway: Gateway) -> None:
    for coin in COINS:
        registry.add(coin)
    for settings in read_settings(gateway.config.plugin_config(PLUGIN_NAME)).values():
        pin_contracts(registry, settings.contracts)


@hookimpl
def register_address_families(registry: AddressFamilyRegistry) -> None:
    for network in NETWORKS:
        registry.add(address_family(network))


def _chain_coins(gateway, chain: str) -> tuple[str, dict[str, str]]:
    """The chain's native coin and its pinned tokens (contract -> symbol) from the coin table."""
    coins = [coin for coin in gateway.coins if coin.chain == chain and coin.address_family == "evm"]
    natives = [coin.symbol for coin in coins if coin.contract is None]
    if len(natives) != 1:
        raise ConfigError(f"config key 'plugin.{PLUGIN_NAME}.{chain}': the coin table has no EVM chain {chain!r}"
                          f" (one native coin expected, found {len(natives)})")
    return natives[0], {coin.contract: coin.symbol for coin in coins if coin.contract}


@hookimpl
def register_chains(registry: ChainRegistry, gateway: Gateway) -> None:
    for chain, settings in read_settings(gateway.config.plugin_config(PLUGIN_NAME)).items():
        native, tokens = _chain_coins(gateway, chain)
        registry.add(EvmAdapter(gateway, settings, native, tokens))


def evm_adapters(gateway) -> list[EvmAdapter]:
    return [adapter for adapter in gateway.chains if isinstance(adapter, EvmAdapter)]


@hookimpl
def register_jobs(registry: JobRegistry, gateway: Gateway) -> None:
    for adapter in evm_adapters(gateway):
        if adapter.settings.sweep:
            registry.add(f"evm.{adapter.name}.sweep", sweep_job(adapter), seconds=adapter.settings.sweep_seconds,
                         signs=True)
        if getattr(hot_wallet_limits(gateway).get(adapter.native), "ceiling", None) is not None:
            registry.add(f"evm.{adapter.name}.cold_sweep", cold_sweep_job(adapter), seconds=COLD_SWEEP_SECONDS,
                         signs=True)


@hookimpl
async def payout_finished(gateway: Gateway, payout: PayoutView) -> None:
    """A failed payout's transaction that never reached the chain frees its nonce."""
    adapter = gateway.chains.get(payout.get("chain", ""))
    if not isinstance(adapter, EvmAdapter) or payout.get("status") != "Failed":
        return
    try:
        await adapter.release_failed_payout(payout["id"])
    except Exception:  # the hook must not fail the finished payout
        log.exception("%s: releasing the nonce of payout %s failed", adapter.name, payout.get("id"))


@hookimpl
def decide_qr_payload(gateway: Gateway, payment: Mapping[str, Any], coin: Coin) -> str | None:
    """EIP-681 for an EVM coin: the chain's configured ``chain_id``, else its published one; None for the others
    (and for a chain of another plugin's with no id known here: a URI without one could pay on the wrong chain)."""
    if coin.address_family != FAMILY:
        return None
    settings = read_settings(gateway.config.plugin_config(PLUGIN_NAME)).get(coin.chain)
    chain_id = settings.chain_id if settings is not None else CHAIN_IDS.get(coin.chain)
    return None if chain_id is None else eip681_uri(payment, coin, chain_id)


@hookimpl
def register_commands(registry: CommandRegistry) -> None:
    from .cli import configure

    registry.add("evm", "EVM chains: show the hot wallet to fund", configure)
