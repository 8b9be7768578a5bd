"""Built-in plugin ``devnet``: a simulated chain so the embedded default needs no node.

Only the chain is simulated: the gateway derives real mainnet addresses and
the devnet accepts transfers to any valid address of a coin's family. State
lives in the gateway's database (``devnet_blocks``, ``devnet_txs``), so the
server's mining job, the hosted page's pay form and ``orbchain devnet`` in
another process all drive one chain. See ``docs/devnet.md``.

Config block (all optional)::

    [plugin.devnet]
    enabled = true          # default: true in development, false in production
    block_seconds = 3       # the mining job's interval
    scan_seconds = 1        # how often the core scans the devnet
    coins = ["BTC", "ETH"]  # default: every receivable coin but XMR and Lightning
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from ...api import PayPageForm, hookimpl
from .adapter import DevnetAdapter, devnet_chain
from .chain import DevnetChain
from .openapi import register_openapi
from .routes import pay_form_action, routes
from .settings import PLUGIN_NAME, read_settings, served_coins
from ...api import Gateway
from ...api.hooks import ChainRegistry, CommandRegistry, JobRegistry, MigrationRegistry, RouteRegistry

__all__ = ["PLUGIN_NAME", "DevnetAdapter", "DevnetChain", "devnet_chain", "pay_form_action", "register_openapi"]

log = logging.getLogger(__name__)

MIGRATIONS_PACKAGE = "orbchain.chains.devnet.migrations"
MINE_JOB = "devnet.mine"


@hookimpl
def check_config(gateway: Gateway) -> None:
    settings = read_settings(gateway.config)
    if settings.enabled and not gateway.config.is_development:
        log.warning("devnet is enabled in production: it credits simulated payments as real ones")


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    # Always registered: the tables are harmless, and enabling later needs no extra step.
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_chains(registry: ChainRegistry, gateway: Gateway) -> None:
    settings = read_settings(gateway.config)
    if not settings.enabled:
        return
    coins = served_coins(settings, gateway.coins, gateway.address_families)
    chain = DevnetChain(gateway.db, coins, clock=gateway.now, families=gateway.address_families)
    registry.add(DevnetAdapter(chain, coins, settings.scan_seconds, gateway))


async def mine_block(gateway) -> None:
    """The periodic job: one block, taking the whole mempool."""
    chain = devnet_chain(gateway)
    if chain is not None:
        await chain.mine(1)


@hookimpl
def register_jobs(registry: JobRegistry, gateway: Gateway) -> None:
    if devnet_chain(gateway) is None:
        return
    registry.add(MINE_JOB, mine_block, seconds=read_settings(gateway.config).block_seconds)


@hookimpl
def register_routes(registry: RouteRegistry, gateway: Gateway) -> None:
    # The pay form moves fake money without authentication: development only.
    if devnet_chain(gateway) is None or not gateway.config.is_development:
        return
    registry.add(routes)


@hookimpl
def extra_pay_page_forms(gateway: Gateway, payment: Mapping[str, Any]) -> list[PayPageForm] | None:
    action = pay_form_action(gateway, payment["track_id"], payment["pay_currency"], payment["status"])
    if action is None:
        return None
    return [PayPageForm(action, "Pay with devnet", note="Development only: simulated chain",
                        amount=payment.get("pay_amount") or "")]


@hookimpl
def register_commands(registry: CommandRegistry) -> None:
    from .cli import configure

    registry.add("devnet", "drive the built-in simulated chain: pay, mine, reorg, status", configure)
