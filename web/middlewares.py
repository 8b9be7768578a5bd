"""Request id, error envelope, text check, maintenance mode, rate limits, then auth; metrics and access log.

Order of the steps, all in one middleware (``edge_middleware``): request id
-> errors -> text check (web/edge.py) -> maintenance -> one pinned database
connection -> rate limit -> auth. The error step turns every failure,
including aiohttp's own 404/405/413 and unexpected exceptions, into the
SPEC envelope, so no client ever sees a traceback. Every answer, error or
not, is counted once in the HTTP metrics by route template (``served``).
"""

from __future__ import annotations

import logging
import re
import secrets
from functools import lru_cache
from time import perf_counter
from typing import Any, Awaitable, Callable, Mapping, TypeVar

import aiohttp_jinja2
from aiohttp import web
from aiohttp.typedefs import Middleware

from ..core.types.errors import ApiError, Maintenance, RateLimited, ValidationError
from ..core.gateway import Gateway
from ..core.infra.logs import ACCESS_LOGGER, request_context
from ..core.infra.db_faults import unavailable_cause
from ..core.infra.metrics import UNMATCHED_ROUTE
from ..core.accounts.security_events import request_origin
from . import i18n
from .edge import request_text_problems
from .i18n import gettext as _, gettext_noop as N_, translate
from .envelope import error_response
from .pages import is_html_page, is_html_path, page_security_headers
from .key_requests import announce_key_request, key_request_listened
from .keys import GATEWAY, PRINCIPAL, REQUEST_ID
from ..core.infra.ratelimit import RATE_LIMITER

log = logging.getLogger(__name__)
access_log = logging.getLogger(ACCESS_LOGGER)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Marked = TypeVar("Marked", bound=Callable[..., Any])  # a handler, or a plugin's before its own decorator wraps it

REQUEST_ID_HEADER = "X-Request-Id"
_REQUEST_ID = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
RATE_ATTR = "__orbchain_rate__"
UNPINNED_ATTR = "__orbchain_unpinned__"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Writes still allowed in maintenance: signing in changes no state.
MAINTENANCE_EXEMPT = frozenset({"/dashboard/auth/login"})

_HTTP_ERRORS = {
    404: ("not_found", "not found"),
    405: ("invalid_request", "method not allowed"),
    413: ("validation", "request body too large"),
}


def rate_class(kind: str | None) -> Callable[[Handler], Handler]:
    """Choose a handler's limit: "auth", "public_page", "pay_page", "cpu", "read", "write" or None (exempt).

    "cpu" is for public routes whose work is CPU-bound (a QR image): a lower
    per-IP limit (``rate_limits.cpu_per_minute``) than the pages'. "pay_page"
    is a payer's own payment page and its live stream: reads, counted per IP
    in their own bucket (``rate_limits.pay_page_per_minute``), so a payer
    watching a payment never uses up the 60/min that /tip and /subscribe
    share (SPEC 8).
    """

    def mark(handler: Handler) -> Handler:
        setattr(handler, RATE_ATTR, kind)
        return handler

    return mark


def holds_no_connection(handler: Marked) -> Marked:
    """Serve a route without the request's pinned database connection.

    For handlers that wait on work other tasks do (a check shared by many
    requests, a stream): on PostgreSQL each waiting request would hold a
    pooled connection the work itself needs, and a burst of such requests
    drains the pool. Queries the handler makes take a connection each.
    """
    setattr(handler, UNPINNED_ATTR, True)
    return handler


@lru_cache(maxsize=2048)
def _pins_connection(handler: object) -> bool:
    return not getattr(handler, UNPINNED_ATTR, False)


class _NoPin:
    """The stand-in for ``Database.connection()`` on ``holds_no_connection`` routes."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


_NO_PIN = _NoPin()


def _route_handler(request: web.Request) -> object:
    return getattr(request.match_info, "handler", None)


# Authenticates the request for a route whose reads/writes count per caller (``kind``: "read",
# "write" or None) and returns the principal it set, if any.
Authenticate = Callable[[web.Request, "str | None"], Awaitable[Any]]


def edge_middleware(authenticate: Authenticate) -> Middleware:
    """Request id, errors, text check, maintenance, pinned connection, rate limit and auth, in one frame.

    These were seven middlewares; each cost every request a coroutine and a
    partial call (about a tenth of a payment read). The order of the steps,
    and what each does, is unchanged: see the module docstring.
    """

    @web.middleware
    async def edge(request: web.Request, handler: Handler) -> web.StreamResponse:
        started = perf_counter()
        incoming = request.headers.get(REQUEST_ID_HEADER)
        request_id = incoming if incoming and _REQUEST_ID.match(incoming) else secrets.token_hex(8)
        request[REQUEST_ID] = request_id
        log_context = {"request_id": request_id}
        request_context.set(log_context)
        request_origin.set(_Origin(request))
        i18n.bind(request)
        gateway = request.app[GATEWAY]
        queries = gateway.db.query_count
        try:
            errors = request_text_problems(request.path, request.query if request.query_string else _NO_QUERY,
                                           request.headers)
            if errors:
                raise ValidationError(errors)
            if gateway.maintenance and request.method not in SAFE_METHODS and request.path not in MAINTENANCE_EXEMPT:
                raise Maintenance()
            # One pinned connection for the request's queries (asyncpg prepares per connection);
            # tasks the handler spawns still take their own.
            async with gateway.db.connection() if _pins_connection(_route_handler(request)) else _NO_PIN:
                kind, bucket = _route_rate(request, gateway)
                if bucket is not None:
                    await count_request(request, *bucket)
                principal = await authenticate(request, kind)
                if principal is not None:
                    log_context["merchant_id"] = principal.merchant_id
                response = await handler(request)
        except ApiError as exc:
            response = _render_error(request, exc)
        except web.HTTPException as exc:
            if exc.status < 400:
                exc.headers[REQUEST_ID_HEADER] = request_id
                served(request, gateway, exc.status, started)
                raise  # redirects pass through
            kind, message = _HTTP_ERRORS.get(exc.status, ("invalid_request", exc.reason.lower()))
            err = ApiError(message)
            err.status, err.type = exc.status, kind
            response = _render_error(request, err)
        except ConnectionResetError as exc:
            if (cause := unavailable_cause(exc)) is not None:  # the database's socket, not the client's
                response = _render_error(request, gateway.db_outage.failed(cause, _where(request)))
            else:
                # The client left before sending the body it announced: nobody reads an
                # answer, and a traceback per dropped client would let anyone fill the log.
                log.info("client went away during %s %s (request %s)", request.method, request.path, request_id)
                response = _render_error(request, ApiError("request body incomplete"))
        except Exception as exc:  # the envelope must hide internals
            cause = unavailable_cause(exc)
            if cause is not None:  # the database is away: 503, logged once per outage (core/infra/db_faults.py)
                response = _render_error(request, gateway.db_outage.failed(cause, _where(request)))
            else:
                log.exception("unhandled error on %s %s (request %s)", request.method, request.path, request_id)
                err = ApiError("internal error")
                err.status, err.type = 500, "internal"
                response = _render_error(request, err)
        else:
            if gateway.db_outage.down and gateway.db.query_count != queries:
                gateway.db_outage.answered()  # this request's queries were answered: the outage is over
        response.headers[REQUEST_ID_HEADER] = request_id
        if response.content_type == "text/html":
            i18n.mark_page_response(request, response)
        served(request, gateway, response.status, started)
        principal = request.get(PRINCIPAL)  # also set when the request was refused after authentication
        if principal is not None and principal.key_id is not None:
            listeners = key_request_listened(request, principal)
            if listeners:
                await announce_key_request(request, principal, listeners, response.status, request_id,
                                           client_ip(request))
        return response

    return edge


_NO_QUERY: Mapping[str, str] = {}


def served(request: web.Request, gateway: Gateway, status: int, started: float) -> None:  # float ok: a clock
    """Count the answered request (route template, never the raw path) and write its access-log line."""
    seconds = perf_counter() - started
    route = _route_template(request)
    gateway.metrics.http.observe(request.method, route, status, seconds)
    if gateway.config.logging.access_log:
        access_log.info("%s %s %d %.1fms", request.method, route, status, seconds * 1000,
                        extra={"method": request.method, "route": route, "status": status,
                               "duration_ms": round(seconds * 1000, 3)})


_PAGE_TITLES = {404: N_("Not found"), 408: N_("Request timed out"), 429: N_("Too many requests"),
                503: N_("Temporarily unavailable"), 500: N_("Something went wrong")}
# Statuses whose cause the payer can do nothing about but wait or go back: one sentence in their language
# (the others keep the error's own words, which name the field or value at fault).
_PAGE_MESSAGES = {
    404: N_("There is nothing at this address. Check the link you were given."),
    408: N_("Your browser took too long to send this form, so nothing was done. Please send it again."),
    429: N_("Please wait a minute and reload this page."),
    503: N_("This service is briefly unavailable. Please try again in a few minutes."),
    500: N_("Something went wrong on our side. Please try again in a moment."),
}


def _route_template(request: web.Request) -> str:
    """The route as metrics and logs name it: its template, never the raw path (no merchant data)."""
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else UNMATCHED_ROUTE


def _where(request: web.Request) -> str:
    return f"{request.method} {_route_template(request)}"


def _sentence(text: str) -> str:
    """A problem as the page's sentence: its first letter capitalised (the rest as written), a full stop."""
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _render_error(request: web.Request, error: ApiError) -> web.StreamResponse:
    """The JSON envelope for the API; an HTML page for routes people see (any method at their address)."""
    if not is_html_page(_route_handler(request)) and not (error.status == 405 and _page_address(request)):
        return error_response(error)
    title = _(_PAGE_TITLES.get(error.status, N_("Request refused")))
    fixed = _PAGE_MESSAGES.get(error.status)
    message = _(fixed) if fixed else _sentence(translate(error.message))
    if error.status == 503 and error.message:  # which service is away, or why (maintenance, not configured)
        message = f"{message} {_sentence(translate(error.message))}"
    response = aiohttp_jinja2.render_template("error.html", request, {"title": title, "message": message},
                                              status=error.status)
    response.headers.update(error.headers)
    return page_security_headers(response)


def _page_address(request: web.Request) -> bool:
    """A method the route lacks at a page's address (405 from routing): the page answers, in HTML."""
    routing_error = request.match_info.http_exception
    return routing_error is not None and routing_error.status == 405 and is_html_path(request.app, request.path)


class _Origin:
    """The request as a security event names it (core/accounts/security_events.py); read only when one is announced."""

    __slots__ = ("_request",)

    def __init__(self, request: web.Request) -> None:
        self._request = request

    @property
    def client_ip(self) -> str:
        return client_ip(self._request)

    @property
    def user_agent(self) -> str:
        return self._request.headers.get("User-Agent", "")

    @property
    def request_id(self) -> str | None:
        return self._request.get(REQUEST_ID)

    @property
    def actor(self) -> str | None:
        principal = self._request.get(PRINCIPAL)
        return principal.actor if principal is not None else None


def client_ip(request: web.Request) -> str:
    if request.app[GATEWAY].config.server.trust_forwarded_for:
        forwarded = request.headers.get("X-Forwarded-For", "")
        if forwarded:
            return forwarded.split(",")[0].strip()
    return request.remote or "unknown"


def _route_rate(request: web.Request, gateway: Gateway) -> tuple[str | None, tuple[str, int] | None]:
    """The route's read/write kind, counted once the caller is known, and the bucket and limit to count now.

    Sign-in and public pages count per IP here. Reads and writes wait for
    authentication (the kind goes to ``authenticate``): counting them before
    would have to guess the caller from headers, and a header the auth layer
    ignores would choose the bucket (see docs/decisions.md, rate-limit
    identity).
    """
    limits = gateway.config.rate_limits
    method = request.method
    if not limits.enabled or method == "OPTIONS":
        return None, None
    kind = _rate_kind(_route_handler(request), method in SAFE_METHODS)
    if kind is None:
        return None, None
    if kind == "read" or kind == "write":
        return kind, None
    limit = {"auth": limits.auth_per_minute, "cpu": limits.cpu_per_minute,
             "pay_page": limits.pay_page_per_minute}.get(kind, limits.public_page_per_minute)
    return None, (f"{kind}:ip:{client_ip(request)}", limit)


@lru_cache(maxsize=2048)
def _rate_kind(handler: object, safe: bool) -> str | None:
    """A handler's ``rate_class`` (worked out once per handler), "read"/"write" by method when it has none."""
    return getattr(handler, RATE_ATTR, "read" if safe else "write")


async def count_request(request: web.Request, bucket: str, limit: int) -> None:
    """One hit on ``bucket``; 429 with Retry-After past ``limit`` per minute."""
    limiter = request.app[GATEWAY].services[RATE_LIMITER]
    decision = limiter.hit_now(bucket, limit) or await limiter.hit(bucket, limit)  # awaits only to sync
    if not decision.allowed:
        raise RateLimited(headers={"Retry-After": str(decision.retry_after)})


def middlewares(authenticate: Authenticate) -> list[Middleware]:
    """The app's middleware: one, running every step in order, ``authenticate`` last before the handler."""
    return [edge_middleware(authenticate)]
