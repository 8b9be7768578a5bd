"""Built-in feature plugin: payout schedules (SPEC 2.16, 4.11).

A merchant asks for "pay my whole BTC balance to this address every day
once it reaches 0.01": ``/dashboard/payout-schedules`` stores the schedule
in this plugin's own table, and a job every minute requests the payouts
through the core's payout service (``orbchain.api.request_payout``),
so the money moves only through the standard, ledgered payout pipeline.
Written exactly as a third-party package would be: hooks only, no core table.
"""

from __future__ import annotations

from pathlib import Path

from ...api import hookimpl
from . import dashboard, openapi
from .routes import routes
from .tick import JOB_NAME, TICK_SECONDS, run_schedules
from ...api.hooks import (
    AssetRegistry, DashboardRegistry, JobRegistry, MigrationRegistry, OperationRegistry, RouteRegistry,
)

PLUGIN_NAME = "schedules"
MIGRATIONS_PACKAGE = "orbchain.plugins.schedules.migrations"

__all__ = ["PLUGIN_NAME", "run_schedules"]


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
    registry.add(JOB_NAME, run_schedules, seconds=TICK_SECONDS)


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    registry.add(templates=Path(__file__).parent / "templates")


@hookimpl
def register_dashboard_pages(registry: DashboardRegistry) -> None:
    registry.add("header-nav", "Schedules", "/app/schedules", order=60, render=dashboard.page,
                 submit=dashboard.submit, scope="payout:create", group="Money")
