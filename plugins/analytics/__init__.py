"""Built-in feature plugin: analytics (SPEC 4.7).

``GET /dashboard/analytics`` shows 30 days of deposits and payouts in USD
with counts. The figures come from the ledger: ``ledger_posted`` counts each
credit, confirmed payout and reversal once into the plugin's daily sums
(``counting``), and a job catches up on any transaction a crash kept from
the hook, so the report reconciles with balances and reads 30 rows however
long the history (bench/bench_analytics.py: a million payments).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ...api import hookimpl
from . import dashboard, openapi
from .counting import CATCH_UP_SECONDS, catch_up, on_posted
from .routes import routes
from ...api import Gateway
from ...api.hooks import (
    AssetRegistry, DashboardRegistry, JobRegistry, MigrationRegistry, OperationRegistry, RouteRegistry,
)

PLUGIN_NAME = "analytics"
MIGRATIONS_PACKAGE = "orbchain.plugins.analytics.migrations"
JOB_NAME = "analytics-catch-up"


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
    registry.add("header-nav", "Analytics", "/app/analytics", order=20, render=dashboard.page, group="Overview")
