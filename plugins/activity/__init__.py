"""Built-in feature plugin ``activity``: the account's security log on the dashboard (issue 29).

The core and other plugins announce what changes who can reach an account
through the ``security_event_occurred`` hook (sign-ins, sign-in lockouts, password
changes, 2FA on and off and from where, API keys, Telegram chats linked
and unlinked); this plugin appends each to ``security_events``, a table the
database keeps append-only (``core.infra.migrate.append_only``, as for the key
audit log), and shows them newest first at ``/app/activity`` (main
navigation) and ``GET /dashboard/activity``. Events marked ``alert`` (2FA
turned on or off anywhere but the dashboard, a sign-in lockout) show on the
dashboard's home page until dismissed (``extra_dashboard_notices``). The
holder, owners and admins (``activity:read``) read the whole log; other team
members only their own entries (``visibility.py``). Blocked, nothing is
recorded and nothing else changes. See docs/dashboard.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...api import hookimpl
from . import dashboard, openapi, store, visibility
from .routes import routes
from ...api import DashboardNotice, Gateway, SecurityEvent
from ...api.hooks import (
    AssetRegistry, DashboardRegistry, MigrationRegistry, OperationRegistry, RouteRegistry, ScopeRegistry,
)

PLUGIN_NAME = "activity"
MIGRATIONS_PACKAGE = "orbchain.plugins.activity.migrations"


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_scopes(registry: ScopeRegistry) -> None:
    registry.add(visibility.SCOPE, visibility.DESCRIPTION, members_only=True)


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
    registry.add("header-nav", "Activity", dashboard.PAGE_PATH, order=95, render=dashboard.page,
                 submit=dashboard.submit, group="Overview")


@hookimpl
async def security_event_occurred(gateway: Gateway, event: SecurityEvent) -> None:
    await store.record(gateway, event)


@hookimpl
async def extra_dashboard_notices(gateway: Gateway, merchant_id: str, principal: Any) -> list[DashboardNotice] | None:
    return await dashboard.notices(gateway, merchant_id, principal)
