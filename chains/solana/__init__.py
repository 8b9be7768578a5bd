"""Built-in plugin ``solana``: SOL on a Solana cluster over the standard JSON-RPC API.

Always: the SOL coin (with its price id), the ``solana`` address family
(SLIP-10 ed25519 m/44'/501'/A'/I') and the hosted page's QR payload (a
Solana Pay transfer request, ``solana:<address>?amount=<SOL>``). With an
RPC endpoint configured it also registers the chain adapter::

    [plugin.solana]
    rpc_url = "http://127.0.0.1:8899"
    headers = { Authorization = "Bearer ..." }   # optional

which watches deposits slot by slot (``adapter.py``, ``blocks.py``), sends
payouts from the hot wallet (``payouts.py``) and, with the job
``solana.sweep``, moves credited deposits to it (``sweeper.py``). Payouts
and sweeps may be signed by a separate ``orbchain signer``
(``REMOTE_SIGNING``); a seedless ``serve`` then takes SOL deposit addresses
from the pool the signer pre-derives (``pool.py``). Without
the block no chain serves SOL but the devnet. See ``docs/solana.md``.
"""

from __future__ import annotations

from typing import Any, Mapping

from ...api import NETWORKS, ReceiveTarget, hookimpl
from ..payment_uri import decimal_uri
from . import pool
from .adapter import SolanaAdapter
from .address import address_family
from .coins import COINS
from .settings import PLUGIN_NAME, read_settings
from .sweeper import sweep_chain, sweep_job
from ...api import AddressFamilyRegistry, Coin, CoinRegistry, Gateway
from ...api.hooks import ChainRegistry, CommandRegistry, JobRegistry, MigrationRegistry

__all__ = ["PLUGIN_NAME", "SolanaAdapter", "solana_adapter", "sweep_chain"]

CHAIN = "solana"  # the chain and address family of our coins (and of any SPL token added to them)
MIGRATIONS_PACKAGE = "orbchain.chains.solana.migrations"


@hookimpl
def check_config(gateway: Gateway) -> None:
    read_settings(gateway.config.plugin_config(PLUGIN_NAME))


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
    settings = read_settings(gateway.config.plugin_config(PLUGIN_NAME))
    if settings is not None:
        (coin,) = COINS
        registry.add(SolanaAdapter(gateway, settings, coin.symbol))


def solana_adapter(gateway) -> SolanaAdapter | None:
    adapter = gateway.chains.get("solana")
    return adapter if isinstance(adapter, SolanaAdapter) else None


@hookimpl
def register_jobs(registry: JobRegistry, gateway: Gateway) -> None:
    adapter = solana_adapter(gateway)
    if adapter is None:
        return
    # Both sign (deposit keys; deriving needs the seed): run by ``orbchain signer`` when one holds the seed.
    if adapter.settings.sweep:
        registry.add(f"{PLUGIN_NAME}.sweep", sweep_job(adapter), seconds=adapter.settings.sweep_seconds, signs=True)
    if pool.pool_wanted(gateway):
        registry.add(pool.JOB_NAME, pool.top_up_job(adapter.settings.address_pool_size),
                     seconds=adapter.settings.address_pool_seconds, signs=True)


@hookimpl
async def decide_receive_target(gateway: Gateway, payment: Mapping[str, Any], coin: Coin) -> ReceiveTarget | None:
    """In a seedless serve, a SOL payment's address from the signer's pre-derived pool (``pool.py``); else None
    (the core derives it from the seed)."""
    adapter = solana_adapter(gateway)
    if coin.address_family != CHAIN or adapter is None or pool.derives_here(gateway):
        return None
    return await pool.claim(gateway, str(payment["merchant_id"]), round(adapter.settings.address_pool_seconds))


@hookimpl
def decide_qr_payload(payment: Mapping[str, Any], coin: Coin) -> str | None:
    """A Solana Pay transfer request: the amount in SOL (or token) units, a token's mint as ``spl-token``."""
    if coin.chain != CHAIN or coin.address_family != CHAIN:  # any coin of ours, a token too
        return None
    return decimal_uri("solana", payment, coin, **({"spl_token": coin.contract} if coin.contract else {}))


@hookimpl
def register_commands(registry: CommandRegistry) -> None:
    from .cli import configure

    registry.add("solana", "Solana: show the hot wallet to fund", configure)
