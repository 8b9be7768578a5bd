"""Typed application state (``web.AppKey``): no module-level singletons."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from ..core.gateway import Gateway

if TYPE_CHECKING:  # pragma: no cover - auth imports this module
    from .auth import Principal

GATEWAY = web.AppKey("gateway", Gateway)
REQUEST_ID = web.RequestKey("request_id", str)
# Set by the auth middleware.
PRINCIPAL: web.RequestKey[Principal] = web.RequestKey("principal")


def gateway_of(request: web.Request) -> Gateway:
    return request.app[GATEWAY]
