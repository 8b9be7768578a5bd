"""Route authentication declarations (the auth middleware enforces them).

A handler declares what it needs with ``@requires(...)``; the middleware in
this module authenticates the request and puts a ``Principal`` at
``request["principal"]``. (Placeholder until the accounts work lands.)
"""

from __future__ import annotations

from typing import Any, Callable

from aiohttp import web

AUTH_ATTR = "__orbchain_auth__"


def requires(**spec: Any) -> Callable:
    def mark(handler: Callable) -> Callable:
        setattr(handler, AUTH_ATTR, spec)
        return handler

    return mark


@web.middleware
async def auth_middleware(request: web.Request, handler: Callable) -> web.StreamResponse:
    return await handler(request)
