"""Serving one payment's live state as Server-Sent Events: the public page's stream and the dashboard's.

The first event is the payment's state at once; then one ``payment`` event
per change the hub hands over (web/live.py), a heartbeat comment every
``live.heartbeat_seconds``, and the stream ends after the event that shows a
final state (Paid, Expired, Cancelled). A Waiting payment's expiry is noticed
by the clock, without a read. While it waits the handler holds no database
connection (its routes are ``holds_no_connection``).

A stream that stands for a signed-in merchant (``merchant_payment_events``)
asks ``still_allowed`` once per heartbeat interval; once the answer is no
(signed out, revoked, idle) it sends ``event: signed-out`` and ends, so a
revoked session stops seeing the payment within ``heartbeat_seconds``; a
check that fails (database away) ends the stream too, so nothing is shown
unconfirmed, and the browser's reconnect meets the session check again.

Both routes hold their slot through ``holding``: it is given back when the
handler ends, or at once when the client's connection closes (not at the
next heartbeat's failed write, which left a full server refusing new
streams for up to ``heartbeat_seconds`` after every client had gone).
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from typing import Awaitable, Callable, Iterator

from aiohttp import hdrs, web

from ..core.types.errors import NotFound
from .envelope import encode
from .connection_guard import on_peer_gone
from .keys import gateway_of
from .live import LiveHub, Stream, live_hub
from .live_state import State, read_state, shown
from .middlewares import client_ip

log = logging.getLogger(__name__)

EVENT = "payment"
SIGNED_OUT = b"event: signed-out\ndata: {}\n\n"
HEADERS = {
    hdrs.CONTENT_TYPE: "text/event-stream; charset=utf-8",
    hdrs.CACHE_CONTROL: "no-cache",
    "X-Accel-Buffering": "no",  # nginx passes each event on at once
}
RETRY_MS = 3000  # how soon a browser reconnects after the stream drops
Check = Callable[[], Awaitable[bool]]


def event_bytes(state: State, event_id: int) -> bytes:
    """One SSE event: ``id``, ``event: payment`` and the state as one JSON line."""
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (event_id, EVENT.encode(), encode(state))


async def merchant_payment_events(request: web.Request, merchant_id: str, track_id: str,
                                  still_allowed: Check) -> web.StreamResponse:
    """The stream of one of ``merchant_id``'s payments, any type (``orbchain.api``: the dashboard's detail).

    Another merchant's payment is 404 as an unknown one. Bounded per merchant
    (``live.max_streams_per_merchant``), per address, per payment and in total
    (web/live.py); ``still_allowed`` is the caller's session check, asked once
    per heartbeat interval.
    """
    gateway = gateway_of(request)
    hub = live_hub(gateway)
    with holding(request, hub, hub.open_for_merchant(track_id, merchant_id, client_ip(request))) as stream:
        first = await read_state(gateway, track_id, merchant_id)
        if first is None:
            raise NotFound("payment not found")
        return await serve_stream(request, stream, first, still_allowed)


@contextmanager
def holding(request: web.Request, hub: LiveHub, stream: Stream) -> Iterator[Stream]:
    """``stream``'s slot for the handler's lifetime, given back at once when the client's connection closes."""

    def gone() -> None:
        hub.close(stream)
        stream.end()  # the handler wakes and returns instead of waiting for its next heartbeat

    forget = on_peer_gone(request, gone)
    try:
        yield stream
    finally:
        forget()
        hub.close(stream)


async def serve_stream(request: web.Request, stream: Stream, first: State,
                       still_allowed: Check | None = None) -> web.StreamResponse:
    """Answer with the stream: ``first`` (unless a change heard during its read brought a newer state), then
    each change, heartbeats between; ends on a final state, at shutdown, or when ``still_allowed`` says no."""
    if stream.latest is None:
        stream.latest = first
    response = web.StreamResponse(headers=HEADERS)
    await response.prepare(request)
    try:
        await response.write(b"retry: %d\n\n" % RETRY_MS)
        await _follow(request, response, stream, still_allowed)
    except ConnectionResetError:
        pass  # the reader left: found at the next write (a heartbeat at the latest)
    return response


def _unchanged_key(state: State) -> State:
    """What decides whether an event is due: everything but the seconds left, which the page counts itself."""
    return {**state, "remaining_seconds": None}


async def _follow(request: web.Request, response: web.StreamResponse, stream: Stream,
                  still_allowed: Check | None) -> None:
    """Send the state whenever what it shows changed; heartbeat between; end on a final state."""
    gateway = gateway_of(request)
    heartbeat = gateway.config.live.heartbeat_seconds
    sent: State | None = None
    event_id = 0
    checked = time.monotonic()
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
        if still_allowed is not None and time.monotonic() - checked >= heartbeat:
            checked = time.monotonic()
            try:
                allowed = await still_allowed()
            except Exception:  # the check could not be made (database away): end unconfirmed, the browser retries
                log.warning("session check of a live stream failed; the stream ends", exc_info=True)
                return
            if not allowed:
                await response.write(SIGNED_OUT)
                return
