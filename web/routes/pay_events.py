"""``GET /pay/{track_id}/events``: a hosted page's live status as Server-Sent Events.

What a stream sends and when it ends: web/live_stream.py. Only an invoice
has one (the payer's hosted page); any other id is 404. The handler holds
no database connection while it waits (``holds_no_connection``): its one
read borrows a connection per statement. Counted per IP in the payer's own
bucket (``pay_page``), and bounded in number (``live.*``, web/live.py); its
slot is free again as soon as the payer's connection closes.
"""

from __future__ import annotations

from urllib.parse import quote

from aiohttp import web

from ...core.types.errors import NotFound
from ...core.payments.service import INVOICE
from ..keys import gateway_of
from ..live import live_hub
from ..live_state import read_state
from ..live_stream import holding, serve_stream
from ..middlewares import client_ip, holds_no_connection, rate_class

routes = web.RouteTableDef()


def events_path(track_id: str) -> str:
    """Where a hosted payment's live status streams (``orbchain.api.pay_events_path`` for plugin pages)."""
    return f"/pay/{quote(track_id, safe='')}/events"


@routes.get("/pay/{track_id}/events", allow_head=False)
@rate_class("pay_page")
@holds_no_connection
async def pay_events(request: web.Request) -> web.StreamResponse:
    gateway = gateway_of(request)
    track_id = request.match_info["track_id"]
    hub = live_hub(gateway)
    with holding(request, hub, hub.open(track_id, client_ip(request))) as stream:  # refused before any read
        first = await read_state(gateway, track_id)
        if first is None or first["type"] != INVOICE:  # a white-label or static id is no public capability
            raise NotFound("payment not found")
        return await serve_stream(request, stream, first)
