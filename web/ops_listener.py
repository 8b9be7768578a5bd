"""The separate operator listener (``metrics.listen``): ``/metrics`` and ``/ready`` on their own address.

Operators often keep metrics off the public port: bound to a private
interface or a port the firewall keeps internal, it needs no token (one can
still be required). It is a second, tiny app sharing this process's gateway,
started and stopped with the main app (a cleanup context). With
``serve --workers N`` every worker binds it with SO_REUSEPORT, like the main
port; any of them answers for all, since metrics are aggregated across
workers (core/infra/metrics.py).
"""

from __future__ import annotations

import logging
from typing import AsyncIterator

from aiohttp import web

from .keys import GATEWAY
from .listen import listen as listening_socket
from .middlewares import middlewares
from .routes.operations import OPS_LISTENER, routes
from .server import GatewayAppRunner, server_header

log = logging.getLogger(__name__)


async def _no_auth(request: web.Request, kind: str | None) -> None:
    """The listener's routes check their own access (routes/operations.py)."""


def ops_app(main: web.Application) -> web.Application:
    app = web.Application(middlewares=middlewares(_no_auth))
    app[GATEWAY] = main[GATEWAY]
    app[OPS_LISTENER] = True
    app.router.add_routes(routes)
    app.on_response_prepare.append(server_header)
    return app


async def ops_listener_ctx(app: web.Application) -> AsyncIterator[None]:
    listen = app[GATEWAY].config.metrics.listen
    if not listen:
        yield
        return
    host, _, port = listen.rpartition(":")
    runner = GatewayAppRunner(ops_app(app), access_log=None)
    await runner.setup()
    # A Listener (web/listen.py), as the main port: a process out of files logs one line, not a flood.
    site = web.SockSite(runner, listening_socket(host.strip("[]"), int(port), reuse_port=True,
                                                 setting="metrics.listen"))
    await site.start()
    log.info("metrics and readiness on http://%s/metrics and /ready", listen)
    try:
        yield
    finally:
        await runner.stop(app[GATEWAY].stop)  # its requests drain to the main app's deadline
