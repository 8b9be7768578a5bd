"""Assemble the OpenAPI 3.1 document from the operation tables.

``build_document(routes=...)`` keeps only the operations the running app
has (a route a disabled plugin did not register is not advertised);
without ``routes`` it returns every operation known to the gateway.
"""

from __future__ import annotations

from typing import Any, Iterable

from aiohttp import web

from . import paths_dashboard, paths_payments, paths_payouts, paths_public
from ...core.contract.registries import OperationRegistry
from .operations import Op, error_components
from .schemas import component_schemas

SKIPPED_METHODS = frozenset({"HEAD", "OPTIONS"})
TABLES = (paths_public, paths_dashboard, paths_payments, paths_payouts)

DESCRIPTION = """Orbchain, a self-hosted crypto payment gateway (SPEC.md is the contract).

* Bodies are JSON; amounts are decimal strings in coin units, never numbers.
* Responses use the V2 envelope {data, message, error, status, version}; transfers and batch
  payouts answer {data} only; GET /health and this document are bare objects.
* Errors use the same envelope with data null and error {type, message, code?, detail?}.
* Merchant routes take one of three API-key headers (or a scoped key in any of them, authorised by the
  scope named on the operation); dashboard routes take a bearer JWT.
* Operations marked x-orbchain-development-only exist only on development servers.
"""

SECURITY_SCHEMES = {
    "bearerAuth": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                   "description": "Dashboard JWT from /dashboard/auth/login or /signup, valid 24 hours."},
    **{
        name: {"type": "apiKey", "in": "header", "name": header,
               "description": f"The legacy {header}, or a scoped key (any of the three headers) holding the "
                              "operation's scope."}
        for name, header in (("merchantApiKey", "merchant_api_key"), ("payoutApiKey", "payout_api_key"),
                             ("generalApiKey", "general_api_key"))
    },
}


def all_operations(plugin_operations: Iterable[Op] = ()) -> list[Op]:
    """Every documented operation, the core's and ``plugin_operations`` (``gateway.api_operations``,
    filled by the ``register_openapi`` hook); a (method, path) documented twice is an error."""
    operations: dict[tuple[str, str], Op] = {}
    for op in [*(op for table in TABLES for op in table.OPERATIONS), *plugin_operations]:
        if op.key in operations:
            raise ValueError(f"operation {op.key} documented twice")
        operations[op.key] = op
    return list(operations.values())


def app_routes(app: web.Application) -> set[tuple[str, str]]:
    """(METHOD, path template) of every route the app serves, HEAD and OPTIONS aside."""
    return {
        (route.method.upper(), route.resource.canonical)
        for route in app.router.routes()
        if route.resource is not None and route.method.upper() not in SKIPPED_METHODS
    }


def build_document(
    routes: Iterable[tuple[str, str]] | None = None, *, base_url: str | None = None, version: str = "0",
    plugins: OperationRegistry | None = None, scopes: Iterable[str] = (),
) -> dict[str, Any]:
    """The document; ``plugins`` are the operations and schemas plugins registered
    (``gateway.api_operations``), ``scopes`` every registered scope (``gateway.scopes``)."""
    keep = None if routes is None else set(routes)
    plugin_ops = list(plugins) if plugins is not None else []
    operations = [op for op in all_operations(plugin_ops) if keep is None or op.key in keep]
    paths: dict[str, dict[str, Any]] = {}
    for op in sorted(operations, key=lambda o: (o.path, o.method)):
        paths.setdefault(op.path, {})[op.method.lower()] = op.to_openapi()
    tags = sorted({op.tag for op in operations})
    schemes = dict(SECURITY_SCHEMES)
    for name, scheme in (plugins.security_schemes() if plugins is not None else {}).items():
        if name in schemes:
            raise ValueError(f"security scheme {name} is the core's")
        schemes[name] = scheme
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
        "info": {"title": "Orbchain API", "version": version, "description": DESCRIPTION,
                 "license": {"name": "MIT", "identifier": "MIT"}},
        "tags": [{"name": tag} for tag in tags],
        "paths": paths,
        "components": {
            "schemas": component_schemas(scopes, plugins.schemas() if plugins is not None else None),
            "responses": error_components(),
            "securitySchemes": schemes,
        },
    }
    if base_url:
        document["servers"] = [{"url": base_url.rstrip("/")}]
    return document
