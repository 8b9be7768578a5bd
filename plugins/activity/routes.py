"""GET /dashboard/activity: the account's security log, newest first, in pages (dashboard JWT).

A member without ``activity:read`` gets only their own entries (``visibility.py``)."""

from __future__ import annotations

from aiohttp import web

from ...api import envelope, gateway_of, pagination, principal_of, requires
from . import store
from .visibility import own_entries_of

routes = web.RouteTableDef()

DEFAULT_LIMIT, MAX_LIMIT = 50, 200  # SPEC 8: logs


@routes.get("/dashboard/activity")
@requires("jwt")
async def activity(request: web.Request) -> web.Response:
    limit, offset = pagination(request.query, default_limit=DEFAULT_LIMIT, max_limit=MAX_LIMIT)
    principal = principal_of(request)
    entries, total = await store.events(gateway_of(request), principal.merchant_id, limit=limit, offset=offset,
                                        actor=own_entries_of(principal))
    return envelope({"events": entries, "total": total, "limit": limit, "offset": offset})
