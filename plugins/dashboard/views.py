"""How every dashboard page is served: the session gate, CSRF on forms, the layout and its headers.

A page handler is ``async def handler(request, session, form) -> web.StreamResponse``
wrapped in :func:`signed_in`: a browser without a live session is sent to the
login page (303), a form (POST) without this session's CSRF token is refused
with 403 and changes nothing. Handlers render with :func:`render` (layout,
navigation, nonce, the hosted pages' CSP) and answer a form with
:func:`see_other` (303, so reload never re-posts).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from functools import wraps
from typing import Any, Awaitable, Callable, Mapping
from urllib.parse import quote, urlencode

import aiohttp_jinja2
from aiohttp import web

from ...api import (
    ApiError, GATEWAY, bind_principal, fiat_text, html_page, missing_scope, page_security_headers,
    read_form, security_headers,
)
from .form_errors import banner, field_errors, label
from .image_origins import ImageOrigins
from .nav_groups import NavEntry, group_nav
from .session import CsrfRefused, Session, check_csrf, current_session, ended_because, touch

# The dashboard's own sections and their groups, in navigation order; plugin entries (slot ``header-nav``)
# follow, each in the group it names.
NAV = (
    NavEntry("Home", "/app", "Overview"),
    NavEntry("Payments", "/app/payments", "Get paid"),
    NavEntry("Payouts", "/app/payouts", "Money"),
    NavEntry("Transfers", "/app/transfers", "Money"),
    NavEntry("API keys", "/app/keys", "Developers"),
    NavEntry("Webhooks", "/app/webhooks", "Developers"),
    NavEntry("Settings", "/app/settings", "Account"),
    NavEntry("Security", "/app/security", "Account"),
)

# The scope a team member needs to see each section (the routes refuse the same; the account holder sees all).
NAV_SCOPES = {
    "/app/payments": "payment:read",
    "/app/payouts": "payout:read",
    "/app/keys": "key:manage",
    "/app/webhooks": "webhook:manage",
    "/app/settings": "settings:manage",
}

# Messages a redirect may ask a page to show (``?notice=<code>``): never text from the URL itself.
NOTICES = {
    "signed-out": "You are signed out.",
    # Why a session cookie stopped working (session.ended_because), each its own sentence.
    "idle": "Your session ended after a period of inactivity. Please sign in again.",
    "session-signed-out": "This session was signed out. Please sign in again.",
    "session-revoked": "This session was ended because the password changed or every session was signed out."
                       " Please sign in again.",
    "session-expired": "This session expired (a sign-in lasts 24 hours). Please sign in again.",
    "account-disabled": "This account is disabled.",
    "session-invalid": "This session is not valid any more. Please sign in again.",
    "member-removed": "Your access to this account was removed by an owner.",
    "sign-in-step-ended": "That sign-in expired or was finished already: nothing was signed in. Please sign in again.",
    "member-joined": "You joined the account. Sign in with your e-mail and the password you chose.",
    "payment-created": "Payment created.",
    "payment-cancelled": "Payment cancelled.",
    "payout-created": "Payout created.",
    "payout-held": "Payout created and held: nothing is sent until a second person approves it (Approvals). It is"
                   " listed below as waiting for approval.",
    "refund-created": "Refund created.",
    "transfer-sent": "Transfer sent.",
    "key-revoked": "Key revoked.",
    "key-brand-changed": "Brand saved: the key's payments from now on wear it.",
    "totp-enabled": "Two-factor authentication is on.",
    "totp-disabled": "Two-factor authentication is off.",
    "redelivery-queued": "The event was queued for delivery again.",
    "redelivery-on-its-way": "That event is still being sent (retried on failure): nothing was queued again.",
    "redelivery-too-soon": "That event was delivered less than a minute ago: nothing was queued again. An event"
                           " can be sent again a minute after its last delivery.",
    "test-event-queued": "A test event was queued for your webhook URL: its attempts appear below.",
    "saved": "Saved.",
}

Handler = Callable[[web.Request, Session, Any], Awaitable[web.StreamResponse]]
Scope = str | Callable[[web.Request], str | None] | None


def see_other(location: str, notice: str | None = None) -> web.HTTPSeeOther:
    if notice:
        location += ("&" if "?" in location else "?") + urlencode({"notice": notice})
    return web.HTTPSeeOther(location)


def login_redirect(request: web.Request, notice: str | None = None) -> web.HTTPSeeOther:
    target = request.path_qs if request.method == "GET" else request.path
    location = "/app/login" if target == "/app" else f"/app/login?next={quote(target, safe='')}"
    return see_other(location, notice)


def forbidden_form(request: web.Request) -> web.Response:
    return _forbidden(request, "Form expired", "This form has expired or came from another site. Go back, reload"
                                               " the page and try again. Nothing was changed.")


def _forbidden(request: web.Request, title: str, message: str) -> web.Response:
    response = aiohttp_jinja2.render_template("error.html", request, {"title": title, "message": message},
                                              status=403)
    return page_security_headers(response)


def signed_in(handler: Handler | None = None, *, scope: Scope = None) -> Any:
    """Serve ``handler`` to a signed-in browser only; forms must carry its CSRF token.

    ``scope``: what a team member needs (a name, or a function of the request
    naming it); a page refuses a member without it with a 403 page. Without
    one, reads are open and forms need ``settings:manage`` (``EVERYONE``: none).
    """
    if handler is None:
        return lambda inner: _signed_in(inner, files=False, scope=scope)
    return _signed_in(handler, files=False, scope=scope)


def signed_in_with_files(handler: Handler | None = None, *, scope: Scope = None) -> Any:
    """``signed_in`` for a page whose form uploads a file (``multipart/form-data``)."""
    if handler is None:
        return lambda inner: _signed_in(inner, files=True, scope=scope)
    return _signed_in(handler, files=True, scope=scope)


def lacking_scope(request: web.Request, session: Session, scope: Scope) -> str | None:
    """The scope this request needs that the session's member lacks; None when allowed (always for the holder)."""
    needed = scope(request) if callable(scope) else scope
    if session.principal is None:
        return None
    return missing_scope(session.principal, needed, request.method)


def refused_page(request: web.Request, scope: str) -> web.Response:
    """403: the member's role does not cover this page or form; nothing was changed."""
    return _forbidden(request, "Not allowed", f"Your role does not allow this (it needs the permission {scope})."
                                              " Ask an owner of the account. Nothing was changed.")


def _signed_in(handler: Handler, *, files: bool,
               scope: Scope = None) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    @html_page
    @wraps(handler)
    async def page(request: web.Request) -> web.StreamResponse:
        session = await current_session(request)
        if session is None:
            raise login_redirect(request, await ended_because(request))
        if session.principal is not None:
            bind_principal(request, session.principal)  # what this request does is attributed to them
        form = None
        if request.method == "POST":
            form = await read_form(request, files=files)  # the edge's checks (web/form_body.py), then CSRF
            try:
                check_csrf(request, form, session)
            except CsrfRefused:
                return forbidden_form(request)
        lacking = lacking_scope(request, session, scope)
        if lacking is not None:
            return refused_page(request, lacking)
        try:
            response = await handler(request, session, form)
        except web.HTTPException as exc:
            if session.refresh:
                touch(request, exc)
            raise
        if session.refresh:
            touch(request, response)
        return response

    return page


def can(session: Session | None, scope: str | None) -> bool:
    """Whether the session may post a form needing ``scope`` (templates hide what it may not)."""
    if session is None or session.principal is None:
        return True
    return missing_scope(session.principal, scope, "POST") is None


def nav_entries(gateway: Any, slot: str = "header-nav", session: Session | None = None) -> list[NavEntry]:
    """The layout's navigation: the dashboard's sections, then what installed plugins put in ``slot``;
    with ``session``, only what its member may see."""
    own = list(NAV) if slot == "header-nav" else []
    entries = own + [NavEntry(entry.title, entry.path, entry.group) for entry in gateway.dashboard.entries(slot)]
    scopes = {**NAV_SCOPES, **{entry.path: entry.scope for entry in gateway.dashboard.entries(slot) if entry.scope}}
    if session is None or session.principal is None:
        return entries
    return [entry for entry in entries if missing_scope(session.principal, scopes.get(entry.path), "GET") is None]


def render(request: web.Request, session: Session | None, template: str, context: Mapping[str, Any] | None = None,
           *, status: int = 200, script_origin: str | None = None, live: bool = False) -> web.Response:
    """A dashboard page: ``template`` (extending ``dashboard/layout.html``) with the layout's context.

    ``script_origin`` lets one page (sign-in with a captcha widget) load the
    provider's script and frame; every other page runs only its nonce'd script.
    ``live`` lets the page's script open its payment's event stream (``connect-src 'self'``). A template
    that draws a brand's logo asks ``allow_image(origin)`` first; the page's CSP then allows those origins.
    """
    gateway = request.app[GATEWAY]
    nonce = secrets.token_urlsafe(16)
    notice = NOTICES.get(request.query.get("notice", ""))
    values = {
        "nonce": nonce, "session": session, "csrf": session.csrf if session else None,
        "nav": group_nav(nav_entries(gateway, session=session)) if session else [],
        "can": lambda scope=None: can(session, scope), "current": request.path, "notice": notice,
        "when": when, "label": label, "fiat": fiat_text, "status_words": status_words,
        "form_id": f"dash-{secrets.token_hex(12)}", "allow_image": (images := ImageOrigins()).allow,
        **(context or {}),
    }
    response = aiohttp_jinja2.render_template(template, request, values, status=status)
    response.headers.update(security_headers(nonce, script_origin=script_origin, live=live,
                                             image_origins=images.origins))
    return response


def status_words(code: Any) -> str:
    """A status as every dashboard page words it: ``CREDITED``/``ACTIVE``/``pending_review`` -> ``Credited``/
    ``Active``/``Pending review``, beside the payments' own ``Waiting``/``Paid`` (the API keeps SPEC's casing)."""
    text = "" if code is None else str(code)
    if text.isupper() or text.islower():
        return text.replace("_", " ").capitalize()
    return text


def when(timestamp: Any) -> str:
    """A Unix time as UTC text (pages carry no script to localise it)."""
    if timestamp in (None, ""):
        return "—"
    return datetime.fromtimestamp(int(timestamp), tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def error_text(exc: ApiError) -> str:
    """What went wrong, in one line for a form without per-field errors: each field's complaint by its label."""
    errors = field_errors(exc)
    return " ".join(f"{label(name)}: {text}" for name, text in errors.items()) if errors else banner(exc)
