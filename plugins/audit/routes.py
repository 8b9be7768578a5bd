"""GET /dashboard/api-keys/{id}/audit-log: one key's requests, newest first (SPEC 5.2)."""

from __future__ import annotations

from aiohttp import web

from ...api import envelope, gateway_of, pagination, principal_of, requires
from .store import key_log, require_own_key

routes = web.RouteTableDef()

DEFAULT_LIMIT, MAX_LIMIT = 50, 200  # SPEC 8: logs


@routes.get("/dashboard/api-keys/{key_id}/audit-log")
@requires("jwt")
async def audit_log(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    key_id = request.match_info["key_id"]
    limit, offset = pagination(request.query, default_limit=DEFAULT_LIMIT, max_limit=MAX_LIMIT)
    await require_own_key(gateway, principal_of(request).merchant_id, key_id)
    entries, total = await key_log(gateway, key_id, limit=limit, offset=offset)
    return envelope({"key_id": key_id, "entries": entries, "total": total, "limit": limit, "offset": offset})
