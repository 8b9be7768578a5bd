"""Request id, error envelope, maintenance mode and rate limits.

Order (outermost first): request id -> errors -> maintenance -> one pinned
database connection -> rate limit -> auth. The error middleware turns every failure, including aiohttp's own
404/405/413 and unexpected exceptions, into the SPEC envelope, so no client
ever sees a traceback.
"""

from __future__ import annotations

import logging
import re
import secrets
from typing import Awaitable, Callable

import aiohttp_jinja2
from aiohttp import web
from aiohttp.typedefs import Middleware

from ..core.errors import ApiError, Maintenance, RateLimited
from .edge import text_middleware
from .envelope import error_response
from .pages import is_html_page, page_security_headers
from .keys import GATEWAY, RATE_KIND, REQUEST_ID

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

REQUEST_ID_HEADER = "X-Request-Id"
_REQUEST_ID = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
RATE_ATTR = "__orbchain_rate__"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Writes still allowed in maintenance: signing in changes no state.
MAINTENANCE_EXEMPT = frozenset({"/dashboard/auth/login"})

_HTTP_ERRORS = {
    404: ("not_found", "not found"),
    405: ("invalid_request", "method not allowed"),
    413: ("validation", "request body too large"),
}


def rate_class(kind: str | None) -> Callable[[Handler], Handler]:
    """Choose a handler's limit: "auth", "public_page", "read", "write" or None (exempt)."""

    def mark(handler: Handler) -> Handler:
        setattr(handler, RATE_ATTR, kind)
        return handler

    return mark


def _route_handler(request: web.Request) -> object:
    return getattr(request.match_info, "handler", None)


@web.middleware
async def request_id_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    incoming = request.headers.get(REQUEST_ID_HEADER, "")
    request_id = incoming if _REQUEST_ID.match(incoming) else secrets.token_hex(8)
    request[REQUEST_ID] = request_id
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        exc.headers[REQUEST_ID_HEADER] = request_id
        raise
    response.headers[REQUEST_ID_HEADER] = request_id
    return response


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as exc:
        return _render_error(request, exc)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise  # redirects pass through
        kind, message = _HTTP_ERRORS.get(exc.status, ("invalid_request", exc.reason.lower()))
        err = ApiError(message)
        err.status, err.type = exc.status, kind
        return _render_error(request, err)
    except ConnectionResetError:
        # The client left before sending the body it announced: nobody reads an
        # answer, and a traceback per dropped client would let anyone fill the log.
        log.info("client went away during %s %s (request %s)", request.method, request.path, request.get(REQUEST_ID))
        return _render_error(request, ApiError("request body incomplete"))
    except Exception:  # the envelope must hide internals
        log.exception("unhandled error on %s %s (request %s)", request.method, request.path, request.get(REQUEST_ID))
        err = ApiError("internal error")
        err.status, err.type = 500, "internal"
        return _render_error(request, err)


_PAGE_TITLES = {404: "Not found", 429: "Too many requests", 503: "Temporarily unavailable", 500: "Something went wrong"}


def _render_error(request: web.Request, error: ApiError) -> web.StreamResponse:
    """The JSON envelope for the API; an HTML page for routes people see."""
    if not is_html_page(_route_handler(request)):
        return error_response(error)
    title = _PAGE_TITLES.get(error.status, "Request refused")
    message = "Please wait a minute and reload this page." if error.status == 429 else error.message.capitalize() + "."
    response = aiohttp_jinja2.render_template("error.html", request, {"title": title, "message": message},
                                              status=error.status)
    response.headers.update(error.headers)
    return page_security_headers(response)


@web.middleware
async def maintenance_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    gateway = request.app[GATEWAY]
    if gateway.maintenance and request.method not in SAFE_METHODS and request.path not in MAINTENANCE_EXEMPT:
        raise Maintenance()
    return await handler(request)


@web.middleware
async def db_connection_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """One database connection for the whole request instead of one per query.

    Every unpinned query borrows a pool connection (a round trip to the
    pool, and asyncpg's prepared statements live per connection); pinning
    makes a request's queries cheaper. Tasks the handler spawns still get
    their own.
    """
    async with request.app[GATEWAY].db.connection():
        return await handler(request)


def client_ip(request: web.Request) -> str:
    if request.app[GATEWAY].config.server.trust_forwarded_for:
        forwarded = request.headers.get("X-Forwarded-For", "")
        if forwarded:
            return forwarded.split(",")[0].strip()
    return request.remote or "unknown"


@web.middleware
async def rate_limit_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Sign-in and public pages count per IP here; reads and writes wait for the auth middleware.

    Counting reads and writes before authentication would have to guess the
    caller from headers, and a header the auth layer ignores would choose the
    bucket (see docs/decisions.md, rate-limit identity).
    """
    gateway = request.app[GATEWAY]
    limits = gateway.config.rate_limits
    route_handler = _route_handler(request)
    default_kind = "read" if request.method in SAFE_METHODS else "write"
    kind = getattr(route_handler, RATE_ATTR, default_kind)
    if not limits.enabled or kind is None or request.method == "OPTIONS":
        return await handler(request)
    if kind in ("read", "write"):
        request[RATE_KIND] = kind
        return await handler(request)
    limit = limits.auth_per_minute if kind == "auth" else limits.public_page_per_minute
    await count_request(request, f"{kind}:ip:{client_ip(request)}", limit)
    return await handler(request)


async def count_request(request: web.Request, bucket: str, limit: int) -> None:
    """One hit on ``bucket``; 429 with Retry-After past ``limit`` per minute."""
    decision = await request.app[GATEWAY].services["rate_limiter"].hit(bucket, limit)
    if not decision.allowed:
        raise RateLimited(headers={"Retry-After": str(decision.retry_after)})


def middlewares(auth_middleware: Middleware) -> list[Middleware]:
    return [
        request_id_middleware,
        error_middleware,
        text_middleware,
        maintenance_middleware,
        db_connection_middleware,
        rate_limit_middleware,
        auth_middleware,
    ]
