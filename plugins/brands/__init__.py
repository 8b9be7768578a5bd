"""Built-in feature plugin: brands (SPEC 2.16, 4.11, 4.9, 6.1-6.2).

An account shows itself to payers under one or more brands: a name, a
logo, a light or dark theme and an accent colour on its hosted pages, and
its own webhook URL and signing secret. ``/dashboard/brands`` manages them
in this plugin's own table; a scoped key with ``brand_id`` tags every
payment it creates (the core copies the tag onto the payment), and three
contract hooks apply the brand: ``decide_page_branding`` (hosted pages),
``decide_webhook_destination`` (where the payment's webhooks go and what signs
them) and ``decide_key_brand_allowed`` (a key may name only its own account's
live brands). Written exactly as a third-party package would be.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ...api import hookimpl
from . import branding, dashboard, openapi
from .routes import routes
from ...api import BrandChoice, Gateway, PageBranding, WebhookDestination
from ...api.hooks import AssetRegistry, DashboardRegistry, MigrationRegistry, OperationRegistry, RouteRegistry

PLUGIN_NAME = "brands"
MIGRATIONS_PACKAGE = "orbchain.plugins.brands.migrations"


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
async def decide_page_branding(gateway: Gateway, merchant_id: str, brand_id: str | None) -> PageBranding | None:
    return await branding.page_branding(gateway, merchant_id, brand_id)


@hookimpl
async def decide_webhook_destination(gateway: Gateway, merchant_id: str,
                                     brand_id: str | None) -> WebhookDestination | None:
    return await branding.webhook_destination(gateway, merchant_id, brand_id)


@hookimpl
async def decide_key_brand_allowed(gateway: Gateway, merchant_id: str, brand_id: str) -> bool | None:
    return await branding.key_brand_allowed(gateway, merchant_id, brand_id)


@hookimpl
async def decide_brand_choices(gateway: Gateway, merchant_id: str) -> Sequence[BrandChoice] | None:
    return await branding.brand_choices(gateway, merchant_id)


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    registry.add(templates=Path(__file__).parent / "templates")


@hookimpl
def register_dashboard_pages(registry: DashboardRegistry) -> None:
    registry.add("header-nav", "Brands", "/app/brands", order=90, render=dashboard.page, submit=dashboard.submit,
                 group="Account", notices={dashboard.SAVED: "Brand saved: its pages and webhooks use it now."})
