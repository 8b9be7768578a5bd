"""Built-in plugin ``lightning``: BTC_LN payments and payouts on a Lightning node.

The coin and the ``lightning`` address family (a BOLT 11 invoice or a
Lightning Address as a payout destination) are always registered. With
``[plugin.lightning] backend = "<name>"`` (settings.py) the plugin also
serves the coin: a chain adapter whose payouts are final within the request
(payouts.py), an invoice per payment through ``decide_receive_target``
(receive.py) with a ``lightning:`` QR, and settlement followed by the node's
invoice stream plus a polling job (settlement.py). Node backends come from
the ``register_lightning_backends`` hook this plugin declares (hookspecs.py;
backend.py is the contract); the built-ins are ``lnd`` (lnd.py) and
``devnet`` (devnet.py: a simulated node, the default in development, with a
pay button on the hosted page and ``orbchain lightning pay|invoice``). See
docs/lightning.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Mapping

from ...api import NETWORKS, ServiceKey, hookimpl
from . import devnet_page, hookspecs, lnurl, receive, settlement, store
from .address import address_family
from .backend import BackendUnavailable, LightningBackendRegistry
from .coins import COINS
from .devnet import DevnetLightningBackend
from .lnd import LndBackend
from .payouts import LightningChain
from .settings import PLUGIN_NAME, check_paying_macaroon, read_settings
from .vetted import VettedBackend
from ...api import AddressFamilyRegistry, Coin, CoinRegistry, Gateway, PayPageForm, ReceiveTarget
from ...api.hooks import (
    ChainRegistry, CommandRegistry, HookspecRegistry, JobRegistry, MigrationRegistry, OperationRegistry,
    RouteRegistry,
)

log = logging.getLogger(__name__)

MIGRATIONS_PACKAGE = "orbchain.chains.lightning.migrations"
POLL_JOB = "lightning.poll"
STREAM_SERVICE = ServiceKey[asyncio.Task[None]]("lightning.stream")


@hookimpl
def register_hookspecs(registry: HookspecRegistry) -> None:
    registry.add(hookspecs)  # register_lightning_backends, for backend plugins


@hookimpl
def check_config(gateway: Gateway) -> None:
    settings = read_settings(gateway.config)
    check_paying_macaroon(gateway.config, settings)
    if settings.backend == "devnet" and not gateway.config.is_development:
        log.warning("the devnet Lightning backend is enabled in production: it credits simulated payments")


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
def register_lightning_backends(registry: LightningBackendRegistry, gateway: Gateway) -> None:
    registry.add("lnd", LndBackend)
    registry.add("devnet", lambda settings: DevnetLightningBackend(settings, gateway.db, gateway.now))


@hookimpl
def register_chains(registry: ChainRegistry, gateway: Gateway) -> None:
    settings = read_settings(gateway.config)
    if not settings.enabled:
        return
    backends = gateway.hooks.collect_declared(hookspecs.register_lightning_backends,
                                              registry=LightningBackendRegistry())
    assert settings.backend is not None, "enabled means a backend is named"
    factory = backends.get(settings.backend)
    if factory is None:
        from ...api import ConfigError

        raise ConfigError(f"config key 'plugin.lightning.backend': unknown backend {settings.backend!r}"
                          f" (known: {', '.join(backends.names())})")
    lookup = lnurl.Lookup(allow_private=settings.lnurl_allow_private_hosts,
                          timeout_seconds=settings.lnurl_timeout_seconds, ca_file=settings.lnurl_ca_file)
    registry.add(LightningChain(factory(settings), settings, clock=gateway.now, lookup=lookup, db=gateway.db))


@hookimpl
def register_jobs(registry: JobRegistry, gateway: Gateway) -> None:
    if receive.lightning_chain(gateway) is not None:
        registry.add(POLL_JOB, poll_job, seconds=read_settings(gateway.config).poll_seconds)


async def poll_job(gateway) -> None:
    chain = receive.lightning_chain(gateway)
    if chain is None:
        return
    try:
        if isinstance(chain.backend, VettedBackend):
            try:  # the node is checked at start and each minute even when no invoice is open
                await chain.backend.vet()
            except BackendUnavailable:
                return  # refused (logged once) or away; the next poll asks again
        await settlement.poll_open_invoices(gateway, chain.backend)
    finally:
        gateway.metrics.chain_nodes(chain.name, chain.node_states())


@hookimpl
def gateway_started(gateway: Gateway) -> None:
    chain = receive.lightning_chain(gateway)
    if chain is None or not read_settings(gateway.config).subscribe:
        return
    gateway.services[STREAM_SERVICE] = asyncio.get_running_loop().create_task(
        settlement.follow_stream(gateway, chain.backend), name=STREAM_SERVICE.name)


@hookimpl
async def gateway_stopping(gateway: Gateway) -> None:
    task = gateway.services.pop(STREAM_SERVICE, None)
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


@hookimpl
async def decide_receive_target(gateway: Gateway, payment: Mapping[str, Any], coin: Coin) -> ReceiveTarget | None:
    return await receive.receive_target(gateway, payment, coin)


@hookimpl
def decide_qr_payload(payment: Mapping[str, Any], coin: Coin) -> str | None:
    return receive.qr_payload(payment, coin)


@hookimpl
async def payments_pruning(gateway: Gateway, track_ids: list[str]) -> None:
    """Unpaid payments being deleted by the core: their node invoices (long expired) are forgotten too."""
    await store.forget_invoices(gateway, track_ids)


@hookimpl
def register_routes(registry: RouteRegistry, gateway: Gateway) -> None:
    if devnet_page.devnet_backend(gateway) is not None:  # development with the devnet node only
        registry.add(devnet_page.routes)


@hookimpl
def register_openapi(registry: OperationRegistry) -> None:
    # Documented whenever the plugin is loaded; the served document keeps only registered routes.
    registry.add(devnet_page.PAY_FORM)


@hookimpl
def extra_pay_page_forms(gateway: Gateway, payment: Mapping[str, Any]) -> list[PayPageForm] | None:
    return devnet_page.page_forms(gateway, payment)


@hookimpl
def register_commands(registry: CommandRegistry) -> None:
    from .cli import configure

    registry.add("lightning", "play payer and payee of the devnet Lightning node: pay, invoice", configure)
