"""Tell plugins about every answered request made with an API key (``api_key_request_answered``).

The edge middleware calls this last, after the response is built and before
it leaves, so an audit plugin's row is committed before the client sees the
answer. Which implementations want which key kinds is worked out once, when
the app is built (``core.contract.plugins.for_key_kinds``): requests without an API
key, with a kind no plugin wants, or on a gateway where no plugin listens,
cost one dict look-up, and no ``KeyRequest`` is built for them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Sequence

from aiohttp import web

from ..core.contract.plugins import KEY_KINDS_ATTR
from ..core.types.views import KeyRequest
from .keys import GATEWAY

if TYPE_CHECKING:  # pragma: no cover
    from ..core.gateway import Gateway
    from .auth import Principal

log = logging.getLogger(__name__)

KEY_KINDS = ("scoped", "merchant_key", "payout_key", "general_key")
# Key kind -> the hook implementations that want requests made with it (only kinds someone wants).
KEY_REQUEST_LISTENERS: web.AppKey[dict[str, tuple[Any, ...]]] = web.AppKey("orbchain_key_request_listeners", dict)


def key_request_listeners(gateway: "Gateway") -> dict[str, tuple[Any, ...]]:
    """Each key kind's ``api_key_request_answered`` implementations (an unmarked one wants every kind)."""
    impls = gateway.pm.hook.api_key_request_answered.get_hookimpls()
    wanted = {}
    for kind in KEY_KINDS:
        chosen = tuple(impl for impl in impls if kind in getattr(impl.function, KEY_KINDS_ATTR, KEY_KINDS))
        if chosen:
            wanted[kind] = chosen
    return wanted


def key_kind(principal: "Principal") -> str:
    """``KeyRequest.key_kind`` of a key principal: ``scoped``, else the legacy key's kind."""
    return "scoped" if principal.via == "scoped_key" else principal.via


def key_request_listened(request: web.Request, principal: "Principal") -> tuple[Any, ...]:
    """The implementations that want this key's requests (empty: announce nothing)."""
    return request.app.get(KEY_REQUEST_LISTENERS, _NONE).get(key_kind(principal), ())


_NONE: dict[str, tuple[Any, ...]] = {}


def _route_template(request: web.Request) -> str:
    route = getattr(request.match_info, "route", None)
    resource = getattr(route, "resource", None)
    return resource.canonical if resource is not None else request.path[:200]


async def announce_key_request(request: web.Request, principal: "Principal", listeners: Sequence[Any], status: int,
                               request_id: str, client_ip: str) -> None:
    """``listeners``: ``key_request_listened``'s answer; ``client_ip``: the middleware's ``client_ip(request)``
    (that module imports this one)."""
    gateway = request.app[GATEWAY]
    view = KeyRequest(
        key_id=str(principal.key_id), key_kind=key_kind(principal),
        merchant_id=principal.merchant_id, method=request.method, route=_route_template(request),
        status=int(status), request_id=request_id, client_ip=client_ip, at=gateway.now(),
    )
    await gateway.hooks.api_key_request_answered_to(listeners, request=view)
