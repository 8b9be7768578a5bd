"""The HTTP server around the app: protocol errors in the SPEC envelope, no version banner.

aiohttp answers a request it cannot even parse (a 100 KB header, a bad
Content-Length, a broken request line) from its low-level
``RequestHandler.handle_error``, before any middleware runs: a plain-text
400 that echoes the offending input back. Every response also carried
``Server: Python/3.x aiohttp/3.y``, telling an attacker exact versions.

``GatewayRequestHandler`` answers those errors with the SPEC 7 envelope
(JSON, no echo of the input) and ``GatewayAppRunner`` makes the server use
it; ``server_header`` (an ``on_response_prepare`` signal wired by
``create_app``) sets a neutral ``Server`` on every ordinary response. The
CLI serves through ``run``; tests can use ``GatewayAppRunner`` directly.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
from http import HTTPStatus
from typing import Any, Callable

from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from ..core.errors import ApiError
from .envelope import error_response

log = logging.getLogger(__name__)

SERVER_NAME = "orbchain"


async def server_header(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: a neutral Server header instead of aiohttp's version banner."""
    response.headers["Server"] = SERVER_NAME


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


class GatewayRequestHandler(RequestHandler):
    """aiohttp's connection handler with the gateway's answer for requests it cannot handle."""

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
        response = protocol_error(status)
        response.force_close()
        return response


class GatewayServer(web.Server):
    """Builds a ``GatewayRequestHandler`` per connection (``web.Server`` hard-wires its own)."""

    def __call__(self) -> RequestHandler:
        return GatewayRequestHandler(self, loop=self._loop, **self._kwargs)


class GatewayAppRunner(web.AppRunner):
    """``web.AppRunner`` serving through ``GatewayServer``."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        # Same handler, request factory and settings; only the connection class differs.
        server.__class__ = GatewayServer
        return server


def run(app: web.Application, host: str, port: int, *, sock: socket.socket | None = None,
        ready: Callable[[], None] | None = None, **runner_kwargs: Any) -> None:
    """Serve ``app`` until SIGINT/SIGTERM (what ``web.run_app`` does, with ``GatewayAppRunner``).

    With ``sock`` (a listening socket a supervisor bound before forking,
    web/workers.py) the app serves on it instead of binding ``host:port``;
    ``ready`` is called once the app has started and accepts requests.
    """

    async def serve() -> None:
        runner = GatewayAppRunner(app, handle_signals=True, **runner_kwargs)
        await runner.setup()
        try:
            site = web.SockSite(runner, sock) if sock is not None else web.TCPSite(runner, host, port)
            await site.start()
            # What start-up built (modules, templates, coin tables, plugin registries) lives as long
            # as the process: out of the collector's full passes, which scanned all of it every second
            # or two under load, a 70 ms pause each, the p99 of a payment read (docs/decisions.md).
            gc.freeze()
            if ready is not None:
                ready()
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    try:
        asyncio.run(serve())
    except (web.GracefulExit, KeyboardInterrupt):
        pass
