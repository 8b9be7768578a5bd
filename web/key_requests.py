"""Tell plugins about every answered request made with an API key (``api_key_request``).

The edge middleware calls this last, after the response is built and before
it leaves, so an audit plugin's row is committed before the client sees the
answer. Requests without an API key, and gateways where no plugin listens,
cost one attribute check: the hot path of a dashboard or legacy-key read is
untouched when no audit plugin is installed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from aiohttp import web

from ..core.plugins import call_event
from ..core.views import KeyRequest
from .keys import GATEWAY

if TYPE_CHECKING:  # pragma: no cover
    from ..core.gateway import Gateway
    from .auth import Principal

log = logging.getLogger(__name__)

HOOK = "api_key_request"
KEY_REQUEST_LISTENED: web.AppKey[bool] = web.AppKey("orbchain_key_request_listened", bool)


def key_request_listeners(gateway: "Gateway") -> bool:
    """Whether any plugin implements ``api_key_request`` (decided once, when the app is built)."""
    return bool(getattr(gateway.pm.hook, HOOK).get_hookimpls())


def key_request_listened(request: web.Request) -> bool:
    return request.app.get(KEY_REQUEST_LISTENED, False)


def _route_template(request: web.Request) -> str:
    route = getattr(request.match_info, "route", None)
    resource = getattr(route, "resource", None)
    return resource.canonical if resource is not None else request.path[:200]


async def announce_key_request(request: web.Request, principal: "Principal", status: int, request_id: str,
                               client_ip: str) -> None:
    """``client_ip``: the middleware's ``client_ip(request)`` (that module imports this one)."""
    gateway = request.app[GATEWAY]
    view = KeyRequest(
        key_id=str(principal.key_id), key_kind="scoped" if principal.via == "scoped_key" else principal.via,
        merchant_id=principal.merchant_id, method=request.method, route=_route_template(request),
        status=int(status), request_id=request_id, client_ip=client_ip, at=gateway.now(),
    )
    await call_event(gateway.pm, HOOK, gateway=gateway, request=view)
