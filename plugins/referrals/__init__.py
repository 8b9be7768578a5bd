"""Built-in feature plugin: referrals (SPEC 2.16, 4.7).

A merchant that signed up with ``ref=<account id>`` (stored by the core at
sign-up; bad values are ignored there) earns its referrer 2000 bps of every
platform fee its credited deposits pay, for 12 months: ``earnings`` posts
each share to the ledger from ``platform:fees`` when the credit is posted
(``ledger_posted``), reverses it when the deposit is reversed, and a job
catches up on anything a crash kept from the hook. ``GET
/dashboard/referrals`` reports it. Core data only through
``orbchain.api``; the plugin's own table is ``referral_earnings``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ...api import hookimpl
from . import dashboard, openapi
from .earnings import CATCH_UP_SECONDS, catch_up, on_posted
from .routes import routes
from ...api import Gateway
from ...api.hooks import (
    AssetRegistry, DashboardRegistry, JobRegistry, MigrationRegistry, OperationRegistry, RouteRegistry,
)

PLUGIN_NAME = "referrals"
MIGRATIONS_PACKAGE = "orbchain.plugins.referrals.migrations"
JOB_NAME = "referrals-catch-up"


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
def register_jobs(registry: JobRegistry) -> None:
    registry.add(JOB_NAME, catch_up, seconds=CATCH_UP_SECONDS)


@hookimpl
async def ledger_posted(gateway: Gateway, transaction: Mapping[str, Any]) -> None:
    await on_posted(gateway, transaction)


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    registry.add(templates=Path(__file__).parent / "templates")


@hookimpl
def register_dashboard_pages(registry: DashboardRegistry) -> None:
    registry.add("header-nav", "Referrals", "/app/referrals", order=80, render=dashboard.page, group="Account")
