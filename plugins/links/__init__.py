"""Built-in feature plugin: payment links and the donation button (SPEC 2.16, 4.11, 4.14).

A merchant creates a link in the dashboard (``/dashboard/payment-links``)
and shares ``/l/<slug>`` or pastes the donate.js snippet. Each visit mints a
fresh invoice through the core's invoice service
(``orbchain.api.create_invoice``), so pricing, fiat rate locking,
addresses and the hosted page are exactly the payment API's; link previews
mint nothing and a browser coming back finds its open invoice
(``visitors.py``), and unpaid invoices are pruned after
``unpaid_retention_days`` (the ``payments_pruning`` hook drops their rows). Written as a
third-party package would be: hooks only, its own tables, no core table.
"""

from __future__ import annotations

from pathlib import Path

from ...api import hookimpl
from . import dashboard, openapi, store
from .routes_dashboard import routes as dashboard_routes
from .routes_public import routes as public_routes
from .settings import PLUGIN_NAME, settings_of
from ...api import Gateway
from ...api.hooks import AssetRegistry, DashboardRegistry, MigrationRegistry, OperationRegistry, RouteRegistry

HERE = Path(__file__).resolve().parent
MIGRATIONS_PACKAGE = "orbchain.plugins.links.migrations"

__all__ = ["PLUGIN_NAME"]


@hookimpl
def check_config(gateway: Gateway) -> None:
    settings_of(gateway, PLUGIN_NAME)


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_routes(registry: RouteRegistry) -> None:
    registry.add(dashboard_routes)
    registry.add(public_routes)


@hookimpl
def register_openapi(registry: OperationRegistry) -> None:
    openapi.register(registry)


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    # donate.js has its own route (/assets/donate.js, SPEC 4.14): no static folder to serve.
    registry.add(templates=HERE / "templates")


@hookimpl
async def payments_pruning(gateway: Gateway, track_ids: list[str]) -> None:
    await store.forget_invoices(gateway, track_ids)


@hookimpl
def register_dashboard_pages(registry: DashboardRegistry) -> None:
    registry.add("header-nav", "Payment links", "/app/links", order=50, render=dashboard.page,
                 submit=dashboard.submit, group="Get paid",
                 notices={dashboard.BRAND_SAVED: "Brand saved: the link's pages and new invoices wear it."})
