"""The HTTP server around the app: protocol errors in the SPEC envelope, no version banner.

aiohttp answers a request it cannot even parse (a 100 KB header, a bad
Content-Length, a broken request line) from its low-level
``RequestHandler.handle_error``, before any middleware runs: a plain-text
400 that echoes the offending input back. Every response also carried
``Server: Python/3.x aiohttp/3.y``, telling an attacker exact versions.

``GatewayRequestHandler`` answers those errors with the SPEC 7 envelope
(JSON, no echo of the input), or with the error page when the refused
request line named a page's address (a link to a page stays a page, issue
29), and ``GatewayAppRunner`` makes the server use it; ``server_header``
(an ``on_response_prepare`` signal wired by ``create_app``) sets a neutral
``Server`` on every ordinary response. The CLI serves through ``run``;
tests can use ``GatewayAppRunner`` directly.

``run`` also owns the stop (issue 34): aiohttp's own signal handling raised
``GracefulExit`` out of the loop, and a second SIGTERM (``make`` passes one
on to its child) raised it again in the middle of the cleanup, which then
never closed the database: the process hung on aiosqlite's threads. Here a
signal only sets the gateway's ``Stop``; the stop itself runs as ordinary
code (``GatewayAppRunner.stop``) whatever else arrives.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import re
import socket
from http import HTTPStatus
from typing import Any, Callable, cast

import aiohttp_jinja2
from aiohttp import web
from aiohttp.http_exceptions import InvalidURLError, LineTooLong
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest
from yarl import URL

from ..core.types.errors import ApiError
from ..core.infra.stopping import (
    CANCEL_SECONDS, HARD_MARGIN_SECONDS, Stop, StopSignals, arm_exit_deadline, ignore_late_stop_signals)
from .connection_guard import ConnectionGuard, ConnectionRules, GuardedRequestHandler
from .envelope import SERVER_NAME, error_response
from .i18n import gettext as _
from .keys import GATEWAY
from .listen import quiet_accept_errors
from .pages import is_html_path, page_security_headers
from .stream_budget import STREAM_BUDGET

log = logging.getLogger(__name__)

REQUEST_POLL_SECONDS = 0.05  # how often a stop looks whether the requests in flight are done


async def server_header(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: a neutral Server header instead of aiohttp's version banner."""
    response.headers["Server"] = SERVER_NAME


# How llhttp's refusal of a target (bytes that are not URL characters) quotes the request line.
_QUOTED_LINE = re.compile(r"b['\"][A-Z]+ (/[^ ?#'\"\\]*)")


def requested_path(exc: BaseException | None) -> str | None:
    """The path a request the parser refused was for, when the error kept it; else None.

    A request line over the limit is refused before any routing, keeping its
    first 100 bytes (``LineTooLong``); a target with bytes no URL may hold
    (raw non-ASCII, control characters) is refused quoting the line
    (``InvalidURLError``). Other refusals (a header too long, a bad
    Content-Length) name no path.
    """
    if isinstance(exc, InvalidURLError):
        found = _QUOTED_LINE.search(str(exc))
        return _routed_path(found.group(1)) if found else None
    if not isinstance(exc, LineTooLong) or not exc.args or not isinstance(exc.args[0], (bytes, bytearray)):
        return None
    target = bytes(exc.args[0])
    if not target.startswith(b"/"):
        return None
    path = target.split(b"?", 1)[0].split(b"#", 1)[0]
    if len(path) == len(target):  # no query within the first bytes: the path itself was cut
        path = path.removesuffix(b"...")
    return _routed_path(path.decode("utf-8", "replace"))


def _routed_path(text: str) -> str | None:
    """``text`` as routing sees a path (percent-decoded); None when it is no path at all."""
    if not text.startswith("/") or text.startswith("//"):  # "//host..." would read as an authority
        return None
    try:
        return URL(text).path
    except ValueError:
        return None


def error_page(app: web.Application, status: int) -> web.Response:
    """The hosted pages' error page for a request to a page's address that could not even be parsed."""
    body = aiohttp_jinja2.get_env(app).get_template("error.html").render(
        title=_("Request refused"), message=_("This address is too long or malformed, so nothing was done. Go back"
                                              " to the page that sent you here and start again."))
    response = page_security_headers(web.Response(status=status, text=body, content_type="text/html"))
    response.headers["Server"] = SERVER_NAME
    return response


def protocol_error(status: int) -> web.Response:
    """The envelope for a request the HTTP layer refused; never echoes what was sent."""
    if status >= 500:
        error = ApiError("internal error")
        error.status, error.type = status, "internal"
    else:
        error = ApiError("malformed HTTP request")
        error.status = status if 400 <= status < 500 else 400
    response = error_response(error)
    response.headers["Server"] = SERVER_NAME
    return response


class GatewayRequestHandler(GuardedRequestHandler):
    """aiohttp's connection handler with the gateway's answer for requests it cannot handle, its read
    deadlines and its per-address cap (web/connection_guard.py)."""

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if status >= 500:
            self.log_exception("Error handling request from %s", request.remote, exc_info=exc)
        else:
            # The parser's message quotes the client's bytes: keep it out of the logs' top level.
            log.info("refused a malformed HTTP request from %s: %s %s", request.remote, status,
                     HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "")
        if request.writer.output_size > 0:
            raise ConnectionError("Response is sent already, cannot send another response with the error message")
        app = getattr(self._manager, "app", None)
        path = requested_path(exc) if 400 <= status < 500 else None
        if app is not None and path is not None and is_html_path(app, path):
            response = error_page(app, status)  # a page's address (a sign-in callback, a payment page): HTML
        else:
            response = protocol_error(status)
        response.force_close()
        return response


class GatewayServer(web.Server):
    """Builds a ``GatewayRequestHandler`` per connection (``web.Server`` hard-wires its own).

    ``app`` (set by ``GatewayAppRunner``) lets a refused request to a page's address be answered as a page;
    ``guard`` holds the connections' rules and counts (web/connection_guard.py).
    """

    app: web.Application | None = None
    guard: ConnectionGuard | None = None

    def __call__(self) -> RequestHandler:
        return GatewayRequestHandler(self, loop=self._loop, **self._kwargs)


class GatewayAppRunner(web.AppRunner):
    """``web.AppRunner`` serving through ``GatewayServer``, stopped the gateway's way (``stop``).

    An app with a gateway sets the idle keep-alive time (``[server] keepalive_seconds``; aiohttp's own
    default holds an idle connection, an open file, for an hour) and the connections' rules.
    """

    def __init__(self, app: web.Application, **kwargs: Any) -> None:
        if GATEWAY in app:
            kwargs.setdefault("keepalive_timeout", app[GATEWAY].config.server.keepalive_seconds)
        super().__init__(app, **kwargs)

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        # Same handler, request factory and settings; only the connection class differs.
        server.__class__ = GatewayServer
        gateway_server = cast(GatewayServer, server)
        gateway_server.app = self.app
        if GATEWAY in self.app:
            gateway = self.app[GATEWAY]
            budget = gateway.services.get(STREAM_BUDGET)  # measured at start-up, which ran just before
            rules = ConnectionRules.of(gateway.config, budget.connections if budget is not None else 0)
            gateway_server.guard = ConnectionGuard(rules, gateway.metrics.connection_closed)
        return server

    async def stop(self, stop: Stop) -> None:
        """End serving as ``stop`` asks: what is in flight may finish until its deadline, then it is cancelled.

        The listening sockets close first (no new connection), idle
        keep-alive connections close, busy ones after their answer. The
        app's ``on_shutdown`` runs next (the scheduler drains its job runs,
        web/app.py), then requests still running at the deadline are
        cancelled and counted on ``stop``. Last the app's cleanup closes the
        rest (chain adapters, HTTP session, every database connection), also
        after a start-up that failed half way.
        """
        for site in list(self.sites):
            await site.stop()
        server = self.server
        try:
            if server is not None:
                await asyncio.sleep(0)  # requests accepted just before are being handled (as aiohttp's cleanup)
                server.pre_shutdown()
                await self.shutdown()
                late = await _requests_in_flight(server, stop)
                if late:
                    stop.cancelled.append(f"{late} request{'s' if late > 1 else ''}")
                await server.shutdown(CANCEL_SECONDS)
        finally:
            await self.app.cleanup()


async def _requests_in_flight(server: web.Server, stop: Stop) -> int:
    """Wait until no request is being handled or the stop's deadline passed; how many still are."""
    while True:
        # aiohttp keeps this flag per connection (no public accessor); without it nothing waits.
        busy = sum(1 for handler in server.connections if getattr(handler, "_request_in_progress", False))
        left = stop.remaining()
        if not busy or not left:
            return busy
        await asyncio.sleep(min(REQUEST_POLL_SECONDS, left))


def run(app: web.Application, host: str, port: int, *, sock: socket.socket | None = None,
        ready: Callable[[], None] | None = None, command: str = "orbchain serve", **runner_kwargs: Any) -> None:
    """Serve ``app`` until SIGTERM or SIGINT, then stop gracefully (core/infra/stopping.py).

    With ``sock`` (a listening socket a supervisor bound before forking,
    web/workers.py) the app serves on it instead of binding ``host:port``;
    ``ready`` is called once the app has started and accepts requests.
    Returns once every connection is closed; a second signal exits the
    process at once instead.
    """
    stop = app[GATEWAY].stop
    signals = StopSignals(stop, command)

    async def serve() -> None:
        signals.install()
        asyncio.get_running_loop().set_exception_handler(quiet_accept_errors)
        runner = GatewayAppRunner(app, **runner_kwargs)
        try:
            await runner.setup()
            site = web.SockSite(runner, sock) if sock is not None else web.TCPSite(runner, host, port)
            await site.start()
            # What start-up built (modules, templates, coin tables, plugin registries) lives as long
            # as the process: out of the collector's full passes, which scanned all of it every second
            # or two under load, a 70 ms pause each, the p99 of a payment read (docs/decisions.md).
            gc.freeze()
            if ready is not None:
                ready()
            await stop.requested.wait()
        finally:
            stop.begin("serving ended")  # no signal: start-up failed; nothing is in flight
            await runner.stop(stop)
            stop.report(command)
            signals.uninstall()  # before asyncio.run closes the loop, which would reset them to the default

    try:
        asyncio.run(serve())
    finally:
        signals.uninstall()
        # However serving ended (a stop, a failed start-up), a thread left running must not keep the exit waiting.
        arm_exit_deadline(HARD_MARGIN_SECONDS, command)
        ignore_late_stop_signals()
