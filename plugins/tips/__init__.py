"""Built-in feature plugin: the tip page ``/tip/<account_id>`` (SPEC 4.14, release 2.3).

Anyone can tip a merchant in any coin it accepts: the page mints an invoice
through the core's invoice service and sends the payer to its hosted page.
It shares the payment-links plugin's per-IP mint bound (``links.minting``)
but not its tables (it has none): blocking ``links`` leaves tips working.
"""

from __future__ import annotations

from pathlib import Path

from ...api import hookimpl
from ..links.settings import settings_of
from . import dashboard, openapi
from .routes import routes
from .settings import PLUGIN_NAME
from ...api import Gateway
from ...api.hooks import AssetRegistry, DashboardRegistry, OperationRegistry, RouteRegistry

HERE = Path(__file__).resolve().parent

__all__ = ["PLUGIN_NAME"]


@hookimpl
def check_config(gateway: Gateway) -> None:
    settings_of(gateway, PLUGIN_NAME)


@hookimpl
def register_routes(registry: RouteRegistry) -> None:
    registry.add(routes)


@hookimpl
def register_openapi(registry: OperationRegistry) -> None:
    openapi.register(registry)


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    registry.add(templates=HERE / "templates")


@hookimpl
def register_dashboard_pages(registry: DashboardRegistry) -> None:
    registry.add("header-nav", "Tip page", dashboard.PAGE_PATH, order=45, render=dashboard.page, group="Get paid")
