"""The merchant dashboard at ``/app``: server-rendered pages over the core's services, a feature plugin.

Pages are aiohttp-jinja2 templates extending this plugin's layout, served
with the hosted pages' CSP (one nonce'd script, which only enhances: every
action is a form that posts and redirects). The browser holds its dashboard
JWT in an HttpOnly cookie that only these pages read (``session.py``); the
JSON API keeps header authentication. Plugins add pages through
``register_dashboard_pages`` (``plugin_pages.py``). See docs/dashboard.md.
"""

from __future__ import annotations

from pathlib import Path

from ...api import Gateway, hookimpl
from ...api.hooks import AssetRegistry, MigrationRegistry, OperationRegistry, RouteRegistry
from . import (
    code_step, openapi, routes_auth, routes_missing, routes_money, routes_payments, routes_payouts, routes_settings,
)
from .plugin_pages import page_routes
from .settings import PLUGIN_NAME, settings_of

HERE = Path(__file__).parent
MIGRATIONS_PACKAGE = "orbchain.plugins.dashboard.migrations"


@hookimpl
def check_config(gateway: Gateway) -> None:
    settings_of(gateway)


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    registry.add(templates=HERE / "templates", static=HERE / "static")


@hookimpl
def register_routes(registry: RouteRegistry, gateway: Gateway) -> None:
    for module in (routes_auth, code_step, routes_payments, routes_money, routes_payouts, routes_settings,
                   routes_missing):
        registry.add(module.routes)
    pages = gateway.dashboard.rendered()
    if pages:
        registry.add(page_routes(pages))


@hookimpl
def register_openapi(registry: OperationRegistry, gateway: Gateway) -> None:
    openapi.register(registry, gateway)
