"""Built-in feature plugin ``swaps``: balance swaps and auto-settle through swap venues (SPEC 3.5, 4.2, 4.12).

Venues are other plugins (``register_swap_venues``; the devnet's simulated
one, ChangeNOW). This plugin owns the swap rows, the dashboard routes, the
job that drives swaps to one outcome, the ``settlement_coin`` payment field
and the account's default settlement coin. The logic is in ``service``
(quote, commit, read: callable without HTTP, e.g. by the mini-app),
``engine`` (the job) and ``settle`` (auto-settle); see docs/swaps.md.
"""

from __future__ import annotations

from pathlib import Path

from ...api import hookimpl
from . import dashboard, openapi, settle, venuein
from .engine import JOB_NAME, JOB_SECONDS, run_swaps
from .routes import routes
from .settings import PLUGIN_NAME, read_settings

MIGRATIONS_PACKAGE = "orbchain.plugins.swaps.migrations"

__all__ = ["PLUGIN_NAME", "run_swaps"]


@hookimpl
def validate_config(gateway) -> None:
    read_settings(gateway.config)


@hookimpl
def register_migrations(registry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_routes(registry) -> None:
    registry.add(routes)


@hookimpl
def register_openapi(registry) -> None:
    openapi.register(registry)


@hookimpl
def register_jobs(registry) -> None:
    registry.add(JOB_NAME, run_swaps, seconds=JOB_SECONDS)


@hookimpl
def register_payment_fields(registry) -> None:
    settle.register_field(registry)


@hookimpl
async def credit_postings(gateway, credit, postings):
    if await venuein.on_credit(gateway, credit):
        return None  # a deposit venue's payout: the settlement coin already, credited as it is
    return await settle.credit_postings(gateway, credit, postings)


@hookimpl(tryfirst=True)
async def payment_receive_target(gateway, payment, coin):
    return await venuein.receive_target(gateway, payment, coin)


@hookimpl
async def deposit_payment(gateway, chain, coin, address, merchant_id):
    return await venuein.deposit_payment(gateway, coin, address, merchant_id)


@hookimpl
async def payment_covered(gateway, payment, deposits):
    return await venuein.covered(gateway, payment)


@hookimpl
async def payment_held_open(gateway, payment):
    return await venuein.held_open(gateway, payment)


@hookimpl
async def deposit_credit_status(gateway, credit):
    return await settle.credit_status(gateway, credit)


@hookimpl
async def payment_webhook_fields(gateway, payment):
    return await settle.webhook_fields(gateway, payment)


@hookimpl
async def deposit_reversed(gateway, deposit):
    await settle.deposit_reversed(gateway, deposit)


@hookimpl
def register_templates(registry) -> None:
    registry.add(templates=Path(__file__).parent / "templates")


@hookimpl
def register_dashboard_pages(registry) -> None:
    registry.add("header-nav", "Swaps", "/app/swaps", order=70, render=dashboard.page, submit=dashboard.submit)
