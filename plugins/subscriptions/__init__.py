"""Built-in feature plugin: recurring subscriptions (SPEC 2.13, 3.4, 4.5, 4.10, 4.14, 6.3-6.4, 8).

A merchant defines plans (USD price, interval, coins); customers enrol
through the API, the dashboard or the hosted page ``/subscribe/<plan_id>``.
Every enrolment opens its first period's invoice at once (``checkout.py``);
a page enrolment is PENDING until that invoice is paid. Every 5 minutes a
billing job mints the invoice of each later due period of an ACTIVE subscription through the core's
invoice service (``orbchain.api.create_invoice``), so the money
moves only through the core's payments and ledger. The outcome
of each invoice arrives through the ``payment_paid``/``payment_expired``/
``payment_cancelled`` hooks (and the tick's own check as a fallback).
Written as a third-party package would be: hooks only, no core table.
Operator guide: docs/subscriptions.md.
"""

from __future__ import annotations

from pathlib import Path

from ...api import hookimpl
from . import billing, dashboard, openapi, webhooks
from .pages import routes as page_routes
from .routes_api import SCOPES, routes as api_routes
from .settings import PLUGIN_NAME, read_settings
from ...api import Gateway, PaymentView
from ...api.hooks import (
    AssetRegistry, DashboardRegistry, EventKindRegistry, JobRegistry, MigrationRegistry, OperationRegistry,
    RouteRegistry, ScopeRegistry,
)

MIGRATIONS_PACKAGE = "orbchain.plugins.subscriptions.migrations"
HERE = Path(__file__).resolve().parent

__all__ = ["PLUGIN_NAME"]


@hookimpl
def check_config(gateway: Gateway) -> None:
    read_settings(gateway)  # settings.py: every key checked, a misspelt one stops the start


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_scopes(registry: ScopeRegistry) -> None:
    for name, description in SCOPES.items():
        registry.add(name, description, legacy_keys=("merchant",))  # SPEC 5.1: the merchant key covers them


@hookimpl
def register_event_kinds(registry: EventKindRegistry) -> None:
    for name, description in webhooks.EVENT_KINDS.items():
        registry.add(name, description)


@hookimpl
def register_routes(registry: RouteRegistry) -> None:
    registry.add(api_routes)
    registry.add(page_routes)


@hookimpl
def register_openapi(registry: OperationRegistry) -> None:
    openapi.register(registry)


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    registry.add(templates=HERE / "templates")


@hookimpl
def register_jobs(registry: JobRegistry) -> None:
    registry.add(billing.JOB_NAME, billing.billing_job, seconds=billing.TICK_SECONDS)


@hookimpl
async def payment_paid(gateway: Gateway, payment: PaymentView) -> None:
    await billing.payment_changed(gateway, payment.track_id)


@hookimpl
async def payment_expired(gateway: Gateway, payment: PaymentView) -> None:
    await billing.payment_changed(gateway, payment.track_id)


@hookimpl
async def payment_cancelled(gateway: Gateway, payment: PaymentView) -> None:
    await billing.payment_changed(gateway, payment.track_id)


@hookimpl
async def payments_pruning(gateway: Gateway, track_ids: list[str]) -> None:
    await billing.forget_pruned(gateway, track_ids)


@hookimpl
def register_dashboard_pages(registry: DashboardRegistry) -> None:
    registry.add("header-nav", "Subscriptions", "/app/subscriptions", order=40, render=dashboard.page,
                 submit=dashboard.submit, group="Get paid",
                 notices={dashboard.BRAND_SAVED: "Brand saved: the plan's pages and new invoices wear it."})
