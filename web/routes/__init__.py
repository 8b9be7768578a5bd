"""Core route modules, one ``web.RouteTableDef`` named ``routes`` each.

Feature plugins add their own tables through the ``register_routes`` hook;
these are the core's (public endpoints, accounts, settings, webhooks).
"""

from __future__ import annotations

import importlib

from aiohttp import web

CORE_ROUTE_MODULES = (
    "public",
    "dashboard_auth",
    "dashboard_settings",
    "dashboard_keys",
    "webhook_logs",
    "payments",
    "dashboard_payments",
    "payouts",
    "pay_page",
    "pay_events",
    "transfers",
    "openapi",
    "operations",
)


def core_route_tables() -> list[web.RouteTableDef]:
    return [importlib.import_module(f"{__name__}.{name}").routes for name in CORE_ROUTE_MODULES]
