"""``GET /pay/{track_id}/events``: a hosted page's live status as Server-Sent Events.

The first event is the payment's state at once; then one ``payment`` event
per change the core announces (web/live.py fans them out), a heartbeat
comment every ``live.heartbeat_seconds``, and the stream ends after the
event that shows a final state (Paid, Expired, Cancelled). A Waiting
payment's expiry is noticed by the clock, without a read. The handler holds
no database connection while it waits (``holds_no_connection``): its one
read borrows a connection per statement. Counted per IP in the payer's own
bucket (``pay_page``), and bounded in number (``live.*``).
"""

from __future__ import annotations

from urllib.parse import quote

from aiohttp import hdrs, web

from ...core.errors import NotFound
from ..envelope import encode
from ..keys import gateway_of
from ..live import Stream, live_hub
from ..live_state import State, read_state, shown
from ..middlewares import client_ip, holds_no_connection, rate_class

routes = web.RouteTableDef()

EVENT = "payment"
HEADERS = {
    hdrs.CONTENT_TYPE: "text/event-stream; charset=utf-8",
    hdrs.CACHE_CONTROL: "no-cache",
    "X-Accel-Buffering": "no",  # nginx passes each event on at once
}
RETRY_MS = 3000  # how soon a browser reconnects after the stream drops


def events_path(track_id: str) -> str:
    """Where a hosted payment's live status streams (``orbchain.api.pay_events_path`` for plugin pages)."""
    return f"/pay/{quote(track_id, safe='')}/events"


def event_bytes(state: State, event_id: int) -> bytes:
    """One SSE event: ``id``, ``event: payment`` and the state as one JSON line."""
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (event_id, EVENT.encode(), encode(state))


@routes.get("/pay/{track_id}/events", allow_head=False)
@rate_class("pay_page")
@holds_no_connection
async def pay_events(request: web.Request) -> web.StreamResponse:
    gateway = gateway_of(request)
    track_id = request.match_info["track_id"]
    hub = live_hub(gateway)
    stream = hub.open(track_id, client_ip(request))  # refused past the bounds before any read
    try:
        first = await read_state(gateway, track_id)
        if first is None:
            raise NotFound("payment not found")
        if stream.latest is None:  # a change heard during the read already brought a newer state
            stream.latest = first
        response = web.StreamResponse(headers=HEADERS)
        await response.prepare(request)
        try:
            await response.write(b"retry: %d\n\n" % RETRY_MS)
            await _follow(request, response, stream)
        except ConnectionResetError:
            pass  # the payer left: found at the next write (a heartbeat at the latest)
        return response
    finally:
        hub.close(stream)


def _unchanged_key(state: State) -> State:
    """What decides whether an event is due: everything but the seconds left, which the page counts itself."""
    return {**state, "remaining_seconds": None}


async def _follow(request: web.Request, response: web.StreamResponse, stream: Stream) -> None:
    """Send the state whenever what it shows changed; heartbeat between; end on a final state."""
    gateway = gateway_of(request)
    heartbeat = gateway.config.live.heartbeat_seconds
    sent: State | None = None
    event_id = 0
    while True:
        assert stream.latest is not None, "the stream starts with its first read"
        now = gateway.now()
        state = shown(stream.latest, now)
        if _unchanged_key(state) != sent:
            event_id += 1
            await response.write(event_bytes(state, event_id))
            sent = _unchanged_key(state)
        if state["final"] or stream.ended:
            return
        wait: float = heartbeat
        if state["status"] == "Waiting" and state["expires_at"] is not None:
            wait = min(wait, max(1, state["expires_at"] - now + 1))  # shown Expired once the clock passes it
        if not await stream.wait(wait):
            await response.write(b": heartbeat\n\n")
