"""Typed application state (``web.AppKey``): no module-level singletons."""

from __future__ import annotations

from aiohttp import web

from ..core.gateway import Gateway

GATEWAY = web.AppKey("gateway", Gateway)
REQUEST_ID = web.RequestKey("request_id", str)
# A credentialed write's rate-limit bucket, counted once the key is known
# (a scoped key's ``rate_limit_rpm`` overrides the default write limit).
WRITE_LIMIT_BUCKET = web.RequestKey("write_limit_bucket", str)
# Set by the auth middleware: an ``orbchain.web.auth.Principal``.
PRINCIPAL = web.RequestKey("principal", object)


def gateway_of(request: web.Request) -> Gateway:
    return request.app[GATEWAY]
