"""Connections that hold a file without asking anything: read deadlines and a per-address cap (issue 42, 6).

aiohttp waits for a request's head and body as long as the client likes:
an idle partial request line stayed open 100 s, and 1,000 connections
trickling their headers were held for 90 s, each an open file (issue 42).
For an operator who serves without a reverse proxy in front (the docs allow
it) the gateway now does what nginx would:

- a request's head must be complete within ``[server] header_timeout_seconds``
  of the connection (or, on a kept-alive connection, of the next request's
  first byte), else the client gets a 408 in the error envelope and the
  connection closes;
- its body within ``[server] body_timeout_seconds`` of the head, else the
  handler reading it gets a 408 (``RequestTimedOut``) and the connection
  closes after the answer;
- one IPv4 address or IPv6 /64 (web/client_address.py) may hold at most
  ``[server] max_pending_connections_per_ip`` connections that have not yet
  sent a request head; past it a new one is closed at once. Not applied
  behind a proxy (``trust_forwarded_for``): there every peer is the proxy;
- the process holds at most the connections its open files allow
  (web/stream_budget.py ``connections``); past it a new one is closed at
  once, so the files the database, nodes and jobs need stay free and
  ``accept()`` never runs out.

Each kind is logged once per episode with its count (core/infra/episodes.py)
and counted in ``orbchain_connections_closed_total{reason}``. The guard also
tells a live stream at once when its client's connection is gone
(``on_peer_gone``), so its slot is free without waiting for a heartbeat.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from ..core.types.errors import ApiError
from ..core.infra.config import Config
from ..core.infra.episodes import Episode
from .client_address import address_group
from .envelope import SERVER_NAME, error_body

log = logging.getLogger(__name__)

QUIET_SECONDS = 60  # an episode of refusals or timeouts ends after this long without one
HEADER_TIMEOUT, BODY_TIMEOUT = "header_timeout", "body_timeout"
PENDING_PER_ADDRESS, CAPACITY = "pending_per_address", "capacity"


class RequestTimedOut(ApiError, TimeoutError):
    """408: the body did not arrive in time. A ``TimeoutError`` too, so aiohttp, draining what is left of the
    body after the answer, takes it as its own lingering timeout and closes quietly instead of logging it."""

    status = 408
    type = "invalid_request"
    default_message = "request timed out: the body did not arrive in time"


@dataclass(frozen=True)
class ConnectionRules:
    header_timeout: float  # float ok: a duration
    body_timeout: float  # float ok: a duration
    max_pending_per_address: int  # 0: no cap
    max_connections: int  # 0: no cap

    @classmethod
    def of(cls, config: Config, max_connections: int = 0) -> "ConnectionRules":
        server = config.server
        return cls(header_timeout=server.header_timeout_seconds, body_timeout=server.body_timeout_seconds,
                   max_pending_per_address=0 if server.trust_forwarded_for else server.max_pending_connections_per_ip,
                   max_connections=max_connections)


class ConnectionGuard:
    """One server's rules, its count of connections without a request per address, and its episodes."""

    def __init__(self, rules: ConnectionRules, count: Callable[[str], None] = lambda reason: None) -> None:
        self.rules = rules
        self._count = count
        self._pending: Counter[str] = Counter()
        self.connections = 0
        self._episodes = {
            CAPACITY: Episode(log, "refused connections: %(open)d open, as many as this process's open files"
                              " allow (web/stream_budget.py; raise LimitNOFILE); later refusals of this episode"
                              " are only counted", "refused %(count)d connections at capacity in %(seconds).1f s",
                              quiet_seconds=QUIET_SECONDS),
            PENDING_PER_ADDRESS: Episode(log, "refused connections from %(address)s: %(cap)d already open without a"
                                         " request ([server] max_pending_connections_per_ip); later refusals of"
                                         " this episode are only counted",
                                         "refused %(count)d connections without a request in %(seconds).1f s",
                                         quiet_seconds=QUIET_SECONDS),
            HEADER_TIMEOUT: Episode(log, "closed a connection from %(address)s that sent no complete request head"
                                    " within %(seconds_allowed)g s (408); later ones of this episode are only"
                                    " counted", "closed %(count)d connections without a complete request head in"
                                    " %(seconds).1f s", level=logging.INFO, quiet_seconds=QUIET_SECONDS),
            BODY_TIMEOUT: Episode(log, "refused a request from %(address)s whose body did not arrive within"
                                  " %(seconds_allowed)g s (408); later ones of this episode are only counted",
                                  "refused %(count)d requests whose body was late in %(seconds).1f s",
                                  level=logging.INFO, quiet_seconds=QUIET_SECONDS),
        }

    def connected(self) -> bool:
        """Count a new connection; False (not counted) when the process holds as many as it may."""
        most = self.rules.max_connections
        if most and self.connections >= most:
            self.closed(CAPACITY, open=self.connections)
            return False
        self.connections += 1
        return True

    def disconnected(self) -> None:
        self.connections -= 1

    def admit(self, group: str) -> bool:
        """Count a new connection from ``group`` as waiting for its first request; False past the cap."""
        cap = self.rules.max_pending_per_address
        if cap and self._pending[group] >= cap:
            self.closed(PENDING_PER_ADDRESS, address=group, cap=cap)
            return False
        self._pending[group] += 1
        return True

    def requested(self, group: str) -> None:
        """A connection of ``group`` sent its first request head (or left before it did)."""
        self._pending[group] -= 1
        if self._pending[group] <= 0:
            del self._pending[group]

    def pending(self, group: str) -> int:
        return self._pending.get(group, 0)

    def closed(self, reason: str, **details: Any) -> None:
        self._count(reason)
        self._episodes[reason].hit(**details)


class GuardedRequestHandler(RequestHandler):
    """aiohttp's connection handler with read deadlines, the per-address cap and peer-gone callbacks.

    ``_manager`` is the server; a server without a ``guard`` attribute (a
    plain ``web.Server``) leaves the deadlines and the cap off.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._guard: ConnectionGuard | None = getattr(self._manager, "guard", None)
        self._counted = False  # in the guard's count of connections
        self._group: str | None = None  # set while the connection counts as waiting for its first request
        self._address = "unknown"
        self._deadline: asyncio.TimerHandle | None = None
        self._body: Any = None  # the payload whose arrival the body deadline waits for
        self._gone: list[Callable[[], None]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        guard = self._guard
        if guard is None:
            return
        if not guard.connected():
            self.force_close()
            return
        self._counted = True
        peer = transport.get_extra_info("peername")
        self._address = address_group(peer[0]) if isinstance(peer, tuple) and peer else "unknown"
        if not guard.admit(self._address):
            self.force_close()
            return
        self._group = self._address
        if self._keepalive_handle is not None:  # aiohttp's silent close of a connection that never asks: ours
            self._keepalive_handle.cancel()       # answers 408 instead, after the head deadline
            self._keepalive_handle = None
        self._expect(guard.rules.header_timeout, self._head_late)

    def data_received(self, data: bytes) -> None:
        guard = self._guard
        if guard is None:
            super().data_received(data)
            return
        # The first bytes of a kept-alive connection's next request: its head is due within the deadline.
        next_request = bool(data) and self._deadline is None and self._body is None \
            and not self._request_in_progress and not self._messages
        heads = self._request_count
        super().data_received(data)
        if self._request_count != heads:
            self._head_arrived(self._messages[-1][1] if self._messages else None)
        elif next_request:  # only when the head did not come whole (the usual case needs no timer)
            self._expect(guard.rules.header_timeout, self._head_late)
        elif self._body is not None and self._body.is_eof():
            self._stop_waiting()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._stop_waiting()
        self._release()
        if self._counted and self._guard is not None:
            self._guard.disconnected()
            self._counted = False
        gone, self._gone = self._gone, []
        super().connection_lost(exc)
        for callback in gone:
            callback()

    def on_gone(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` once this connection closes; returns a function that cancels it."""
        self._gone.append(callback)

        def forget() -> None:
            if callback in self._gone:
                self._gone.remove(callback)

        return forget

    def _head_arrived(self, payload: Any) -> None:
        self._stop_waiting()
        self._release()
        if payload is not None and not payload.is_eof() and self._guard is not None:
            self._body = payload
            self._expect(self._guard.rules.body_timeout, self._body_late)

    def _head_late(self) -> None:
        self._deadline = None
        assert self._guard is not None
        self._guard.closed(HEADER_TIMEOUT, address=self._address, seconds_allowed=self._guard.rules.header_timeout)
        if self.transport is not None:
            self.transport.write(_timeout_answer())
        self.force_close()

    def _body_late(self) -> None:
        self._deadline = None
        body, self._body = self._body, None
        if body is None or body.is_eof():
            return
        assert self._guard is not None
        self._guard.closed(BODY_TIMEOUT, address=self._address, seconds_allowed=self._guard.rules.body_timeout)
        if self._request_in_progress:
            body.set_exception(RequestTimedOut())  # the handler reading it answers 408 through the envelope
            self.close()  # then the connection ends
        else:
            self.force_close()  # nobody reads it (answered already, or queued behind another request)

    def _expect(self, seconds: float, late: Callable[[], None]) -> None:  # float ok: a duration
        self._deadline = self._loop.call_later(seconds, late)

    def _stop_waiting(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._body = None

    def _release(self) -> None:
        if self._group is not None and self._guard is not None:
            self._guard.requested(self._group)
        self._group = None


def on_peer_gone(request: web.BaseRequest, callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback`` as soon as ``request``'s client closes its connection; returns the cancel.

    Served by a plain aiohttp server (no ``GuardedRequestHandler``) nothing is
    called: the stream then finds the departed client at its next write.
    """
    protocol = request.protocol
    if isinstance(protocol, GuardedRequestHandler):
        return protocol.on_gone(callback)
    return lambda: None


def _timeout_answer() -> bytes:
    """The 408 of a request whose head never came: the SPEC envelope, written straight to the socket."""
    error = ApiError("request timed out: no complete request head arrived in time")
    error.status = 408
    body = error_body(error)
    return (b"HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json; charset=utf-8\r\n"
            b"Content-Length: %d\r\nConnection: close\r\nServer: %s\r\n\r\n%s"
            % (len(body), SERVER_NAME.encode(), body))
