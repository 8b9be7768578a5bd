"""GET /dashboard/webhook-logs: the caller's webhook delivery attempts (SPEC 4.7, 2.16)."""

from __future__ import annotations

from aiohttp import web

from ...core.events.webhooks import delivery_log
from ..auth import principal_of, requires
from ..envelope import envelope
from ..keys import gateway_of
from ..validation import pagination

routes = web.RouteTableDef()

DEFAULT_LIMIT, MAX_LIMIT = 50, 200  # SPEC 8: webhook logs


@routes.get("/dashboard/webhook-logs")
@requires("jwt")
async def webhook_logs(request: web.Request) -> web.Response:
    limit, offset = pagination(request.query, default_limit=DEFAULT_LIMIT, max_limit=MAX_LIMIT)
    logs, total = await delivery_log(gateway_of(request), principal_of(request).merchant_id, limit=limit, offset=offset)
    return envelope({"logs": logs, "total": total, "limit": limit, "offset": offset})
