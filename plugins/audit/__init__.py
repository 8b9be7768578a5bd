"""Built-in feature plugin: the per-key audit log (SPEC 4.9, 5.2).

Every request made with a scoped (named) API key appends a row — key,
route template, status, request id, source IP, time — through the
``api_key_request_answered`` hook, committed before the response leaves
(``writer.AuditWriter`` batches concurrent rows into one commit). The table
is append-only in the database itself; ``GET
/dashboard/api-keys/{key_id}/audit-log`` reads it in pages. Legacy keys are
not logged: the SPEC gives the audit log to named keys, and the legacy
merchant key carries the busiest read path.
"""

from __future__ import annotations

from pathlib import Path

from ...api import for_key_kinds, hookimpl
from ...api import ServiceKey
from . import dashboard, openapi
from .routes import routes
from .writer import AuditWriter
from ...api import Gateway, KeyRequest
from ...api.hooks import AssetRegistry, DashboardRegistry, MigrationRegistry, OperationRegistry, RouteRegistry

PLUGIN_NAME = "audit"
MIGRATIONS_PACKAGE = "orbchain.plugins.audit.migrations"
SERVICE = ServiceKey("audit_writer", AuditWriter)


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_routes(registry: RouteRegistry) -> None:
    registry.add(routes)


@hookimpl
def register_openapi(registry: OperationRegistry) -> None:
    openapi.register(registry)


def writer_of(gateway) -> AuditWriter:
    writer = gateway.services.get(SERVICE)
    if writer is None:
        writer = gateway.services[SERVICE] = AuditWriter(gateway)
    return writer


@hookimpl
@for_key_kinds("scoped")
async def api_key_request_answered(gateway: Gateway, request: KeyRequest) -> None:
    await writer_of(gateway).append(request)


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    registry.add(templates=Path(__file__).parent / "templates")


@hookimpl
def register_dashboard_pages(registry: DashboardRegistry) -> None:
    registry.add("key-actions", "Audit log", "/app/keys/audit", render=dashboard.page, scope="key:manage")
