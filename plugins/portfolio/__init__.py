"""Built-in feature plugin: the merchant's portfolio in USD (SPEC 2.16, 4.7).

``GET /dashboard/portfolio`` lists every accepted coin, zero balances
included, valued with the core price service's cached spot prices. Only
core services are used (``merchant_record``, ``available_balance``,
``PriceService.quotes``): no table of its own, none of the core's.
"""

from __future__ import annotations

from ...api import hookimpl
from pathlib import Path

from . import dashboard, openapi
from .routes import routes
from ...api.hooks import AssetRegistry, DashboardRegistry, OperationRegistry, RouteRegistry

PLUGIN_NAME = "portfolio"


@hookimpl
def register_routes(registry: RouteRegistry) -> None:
    registry.add(routes)


@hookimpl
def register_openapi(registry: OperationRegistry) -> None:
    openapi.register(registry)


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    registry.add(templates=Path(__file__).parent / "templates")


@hookimpl
def register_dashboard_pages(registry: DashboardRegistry) -> None:
    registry.add("header-nav", "Portfolio", "/app/portfolio", order=10, render=dashboard.page, group="Overview")
