"""Built-in feature plugin: auto-withdraw rules (SPEC 2.16, 4.8, 8).

"When my ETH balance reaches 1, send it all to my cold wallet": rules live
in this plugin's own tables, a job every 5 minutes requests the payouts
through the core's payout service (``orbchain.api.request_payout``),
so money moves only through the ledgered payout pipeline and the backlog
breaker applies. Written as a third-party package would be: hooks only.
"""

from __future__ import annotations

from pathlib import Path

from ...api import hookimpl
from . import dashboard, openapi
from .check import CHECK_SECONDS, JOB_NAME, run_autowithdraw
from .routes import routes
from ...api.hooks import (
    AssetRegistry, DashboardRegistry, JobRegistry, MigrationRegistry, OperationRegistry, RouteRegistry,
)

PLUGIN_NAME = "autowithdraw"
MIGRATIONS_PACKAGE = "orbchain.plugins.autowithdraw.migrations"

__all__ = ["PLUGIN_NAME", "run_autowithdraw"]


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
    registry.add(JOB_NAME, run_autowithdraw, seconds=CHECK_SECONDS)


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    registry.add(templates=Path(__file__).parent / "templates")


@hookimpl
def register_dashboard_pages(registry: DashboardRegistry) -> None:
    registry.add("settings-nav", "Auto-withdraw", "/app/auto-withdraw", order=10, render=dashboard.page,
                 submit=dashboard.submit, scope="payout:create", group="Payments")
