"""Built-in feature plugin ``swaps``: balance swaps and auto-settle through swap venues (SPEC 3.5, 4.2, 4.12).

Venues are other plugins (``register_swap_venues``, a hook this plugin
declares in ``hookspecs``; the devnet's simulated one, ChangeNOW), kept in
this plugin's state (``venue_registry``). This plugin owns the swap rows,
the dashboard routes, the job that drives swaps to one outcome, the
``settlement_coin`` payment field and the account's default settlement coin
(the core asks it through ``decide_settlement_coin`` before accepting a
swap-only coin). The logic is in ``service`` (quote, commit, read: callable
without HTTP, e.g. by the mini-app), ``engine`` (the job) and ``settle``
(auto-settle); see docs/swaps.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ...api import hookimpl
from . import dashboard, hookspecs, openapi, settle, store, venuein
from .engine import JOB_NAME, JOB_SECONDS, run_swaps
from .routes import routes
from .settings import PLUGIN_NAME, read_settings
from .venue_registry import close_venues, collect_venues
from ...api import Coin, Credit, DepositView, Gateway, PaymentView, Posting, ReceiveTarget
from ...api.hooks import (
    AssetRegistry, DashboardRegistry, HookspecRegistry, JobRegistry, MigrationRegistry, OperationRegistry,
    PaymentFieldRegistry, RouteRegistry, ScopeRegistry,
)

MIGRATIONS_PACKAGE = "orbchain.plugins.swaps.migrations"

__all__ = ["PLUGIN_NAME", "run_swaps"]


@hookimpl
def register_hookspecs(registry: HookspecRegistry) -> None:
    registry.add(hookspecs)  # register_swap_venues, for venue plugins


@hookimpl
def register_scopes(registry: ScopeRegistry) -> None:
    # A team member's permission to swap (finance's); the dashboard routes take no API key.
    registry.add("swap:create", "Quote and start swaps from the dashboard.", members_only=True)


@hookimpl
def check_config(gateway: Gateway) -> None:
    read_settings(gateway.config)


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_routes(registry: RouteRegistry) -> None:
    registry.add(routes)


@hookimpl
def register_openapi(registry: OperationRegistry) -> None:
    openapi.register(registry)


@hookimpl
def register_jobs(registry: JobRegistry, gateway: Gateway) -> None:
    collect_venues(gateway)  # while the gateway is built: a venue added twice stops the start
    registry.add(JOB_NAME, run_swaps, seconds=JOB_SECONDS)


@hookimpl
async def gateway_stopping(gateway: Gateway) -> None:
    await close_venues(gateway)


@hookimpl
def register_payment_fields(registry: PaymentFieldRegistry) -> None:
    settle.register_field(registry)


@hookimpl
async def filter_credit_postings(gateway: Gateway, credit: Credit, postings: list[Posting]) -> list[Posting] | None:
    if await venuein.on_credit(gateway, credit):
        return None  # a deposit venue's payout: the settlement coin already, credited as it is
    return await settle.credit_postings(gateway, credit, postings)


@hookimpl(tryfirst=True)
async def decide_receive_target(gateway: Gateway, payment: Mapping[str, Any], coin: Coin) -> ReceiveTarget | None:
    return await venuein.receive_target(gateway, payment, coin)


@hookimpl
async def decide_deposit_payment(gateway: Gateway, chain: str, coin: str, address: str, merchant_id: str) -> str | None:
    return await venuein.deposit_payment(gateway, coin, address, merchant_id)


@hookimpl
async def decide_payment_covered(gateway: Gateway, payment: Mapping[str, Any], deposits: list[Mapping[str,
                                 Any]]) -> bool | None:
    return await venuein.covered(gateway, payment)


@hookimpl
async def decide_payment_held_open(gateway: Gateway, payment: Mapping[str, Any]) -> bool | None:
    return await venuein.held_open(gateway, payment)


@hookimpl
def decide_settlement_coin(merchant: Mapping[str, Any]) -> str | None:
    return settle.settlement_coin_of(merchant)


@hookimpl
async def decide_credit_status(gateway: Gateway, credit: Credit) -> str | None:
    return await settle.credit_status(gateway, credit)


@hookimpl
async def extra_payment_webhook_fields(gateway: Gateway, payment: PaymentView) -> Mapping[str, Any] | None:
    return await settle.webhook_fields(gateway, payment)


@hookimpl
async def deposit_reversed(gateway: Gateway, deposit: DepositView) -> None:
    await settle.deposit_reversed(gateway, deposit)


@hookimpl
async def payments_pruning(gateway: Gateway, track_ids: list[str]) -> None:
    await store.forget_payments(gateway, track_ids)


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    registry.add(templates=Path(__file__).parent / "templates")


@hookimpl
def register_dashboard_pages(registry: DashboardRegistry) -> None:
    registry.add("header-nav", "Swaps", "/app/swaps", order=70, render=dashboard.page, submit=dashboard.submit,
                 scope="swap:create", group="Money")
