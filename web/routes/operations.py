"""Operator endpoints: ``GET /metrics`` (Prometheus text format) and ``GET /ready`` (readiness).

``/metrics`` is off unless the operator protects it: with ``metrics.token``
(or ``token_file``) it asks for ``Authorization: Bearer <token>`` (compared
in constant time); with ``metrics.listen`` it is served only on that
separate address (web/ops_listener.py) and answers 404 on the main port.
``/ready`` answers 200 when the process can serve and 503 when not; unlike
``/health`` (SPEC 4.1) it asks the database and the chain nodes. Anyone gets
the bare status (``{"ready": bool}``, what a load balancer needs); the
detail (database, migrations, each chain's heights and lag) goes only to
whoever may read ``/metrics`` there: the bearer token, or the separate
listener (issue 29: chain heights are an operator's business).
"""

from __future__ import annotations

from aiohttp import web

from ...core.types.errors import ApiError, NotFound, Unauthorized
from ...core.infra.metrics import CONTENT_TYPE
from ...core.infra.metrics_access import bearer_matches, metrics_token
from ...core.health.metrics_db import facts_registry, read_facts
from ...core.health.readiness import check_readiness, shared_readiness
from ..keys import gateway_of
from ..middlewares import holds_no_connection, rate_class

routes = web.RouteTableDef()
# Set on the separate listener's app: there /metrics needs no token of its own.
OPS_LISTENER = web.AppKey("ops_listener", bool)


class MetricsUnauthorized(Unauthorized):
    def __init__(self) -> None:
        super().__init__("metrics token required", headers={"WWW-Authenticate": 'Bearer realm="metrics"'})


def _refusal(request: web.Request) -> ApiError | None:
    """Why this request may not read operator data (``/metrics``, ``/ready``'s detail) here; None when it may."""
    config = gateway_of(request).config.metrics
    on_listener = request.app.get(OPS_LISTENER, False)
    token = metrics_token(config)
    if config.listen and not on_listener:
        return NotFound()  # served on the separate address only
    if not config.listen and not token:
        return NotFound()  # never exposed unprotected
    if token and not bearer_matches(request.headers.get("Authorization", ""), token):
        return MetricsUnauthorized()
    return None


@routes.get("/metrics")
@rate_class(None)
async def metrics(request: web.Request) -> web.Response:
    refusal = _refusal(request)
    if refusal is not None:
        raise refusal
    gateway = gateway_of(request)
    facts = await read_facts(gateway)
    body = gateway.metrics.exposition([facts_registry(facts)])
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


@routes.get("/ready")
@rate_class(None)
@holds_no_connection  # anonymous callers wait on one shared check, which needs connections of its own
async def ready(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    if _refusal(request) is None:
        readiness = await check_readiness(gateway)
        body = readiness.as_dict()
    else:  # anonymous: one shared check a second, so /ready cannot multiply requests into node RPCs
        readiness = await shared_readiness(gateway)
        body = {"ready": readiness.ready}
    return web.json_response(body, status=200 if readiness.ready else 503)
