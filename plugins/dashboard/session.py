"""The browser session of the dashboard: a cookie holding the dashboard JWT, CSRF tokens, idle timeout.

* ``orb_session`` holds ``<jwt>~<session_id>~<last_seen>~<mac>``: the same
  token ``POST /dashboard/auth/login`` returns (24 h, revoked by a password
  change; signing out revokes it in the core, so neither a copied cookie nor
  the token used as a Bearer on the JSON API outlives the logout), a random
  id for this browser session (kept for the format: the revoked token now
  ends the session, no table of ended ids is read), the time of
  the last request, and a MAC over all three so the browser cannot move its
  own idle clock. HttpOnly, SameSite=Lax, Secure when the dashboard
  is served over https. Only this plugin's ``/app`` pages read it: the JSON
  API (``/v1``, ``/dashboard``) authenticates by header alone, so a forged
  cross-site request can never ride the cookie into it.
* A session unused for ``idle_minutes`` is over; each page view moves
  ``last_seen`` (rewritten at most once a minute).
* Every form carries a CSRF token: for a signed-in browser an HMAC of its
  session token (a new session, a new token); before sign-in an HMAC of a
  random ``orb_pre`` cookie (login CSRF). Both are keyed by the gateway's key
  for this purpose (``derived_key``: never the JWT secret itself, which the
  core alone holds), so nothing is stored server-side.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from ...api import (
    GATEWAY, ApiError, Principal, Unauthorized, dashboard_principal, dashboard_token_revoked, derived_key,
    revoke_dashboard_token,
)
from ...api.merchant import JWT_LIFETIME_SECONDS, dashboard_token_claims, get_merchant, member_totp_enabled
from .settings import settings_of

SESSION_COOKIE = "orb_session"
PRE_COOKIE = "orb_pre"
CSRF_FIELD = "csrf_token"
TOUCH_SECONDS = 60
_SEP = "~"


class CsrfRefused(Exception):
    """A form arrived without the token its page carried (or from another origin)."""


@dataclass(frozen=True)
class Session:
    """A signed-in browser: whose dashboard, and the token its forms must carry."""

    merchant_id: str
    email: str
    csrf: str
    totp_enabled: bool  # the acting person's own 2FA (a member's, not the holder's)
    refresh: bool  # the cookie's last_seen is old enough to rewrite
    expires_at: int  # when the JWT inside expires
    token: str = field(default="", repr=False)  # the dashboard JWT, revoked on sign-out
    principal: Principal | None = None  # who acts: the holder, or a team member with their role's scopes

    @property
    def is_member(self) -> bool:
        return self.principal is not None and self.principal.member_id is not None

    @property
    def requester(self) -> str:
        """Who asks for a payout from this browser (``payouts.requested_by``)."""
        return self.principal.requester if self.principal is not None else "holder"


def _key(gateway: Any) -> bytes:
    return derived_key(gateway, "dashboard/session")


def _mac(gateway: Any, text: str) -> str:
    digest = hmac.new(_key(gateway), text.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def is_https(request: web.Request) -> bool:
    """Secure cookies when the page is served over https (directly or as the configured base URL)."""
    return request.secure or request.app[GATEWAY].config.base_url.startswith("https://")


def _cookie(response: web.StreamResponse, request: web.Request, name: str, value: str,
            max_age: int | None = None) -> None:
    response.set_cookie(name, value, path="/app", httponly=True, samesite="Lax", secure=is_https(request),
                        max_age=max_age)


def start_session(request: web.Request, response: web.StreamResponse, token: str,
                  session_id: str | None = None) -> None:
    """Sign the browser in with a dashboard JWT (from log-in or sign-up): a new session id unless one is kept."""
    gateway = request.app[GATEWAY]
    body = _SEP.join((token, session_id or secrets.token_urlsafe(18), str(gateway.now())))
    _cookie(response, request, SESSION_COOKIE, f"{body}{_SEP}{_mac(gateway, body)}", max_age=JWT_LIFETIME_SECONDS)
    response.del_cookie(PRE_COOKIE, path="/app")


def end_session(response: web.StreamResponse) -> None:
    """Clear the cookie (``sign_out`` also ends the session server-side)."""
    response.del_cookie(SESSION_COOKIE, path="/app")


async def sign_out(request: web.Request, response: web.StreamResponse, session: Session) -> None:
    """End the session for good: its token is revoked (refused on the JSON API too) and the cookie cleared."""
    await revoke_dashboard_token(request.app[GATEWAY], session.token)
    end_session(response)


def touch(request: web.Request, response: web.StreamResponse) -> None:
    """Move the idle clock of the request's session forward (same token, same session id)."""
    found = _cookie_parts(request)
    if found is not None:
        start_session(request, response, found[0], found[1])


def _cookie_parts(request: web.Request) -> tuple[str, str, int] | None:
    """(token, session id, last_seen) of a genuine cookie, else None."""
    value = request.cookies.get(SESSION_COOKIE, "")
    parts = value.split(_SEP)
    if len(parts) != 4 or not parts[1] or not parts[2].isdigit():
        return None
    body = _SEP.join(parts[:3])
    if not hmac.compare_digest(_mac(request.app[GATEWAY], body).encode(), parts[3].encode()):
        return None
    return parts[0], parts[1], int(parts[2])


async def current_session(request: web.Request) -> Session | None:
    """The signed-in merchant of this browser, or None (no cookie, tampered, idle, revoked, disabled)."""
    gateway = request.app[GATEWAY]
    found = _cookie_parts(request)
    if found is None:
        return None
    token, _, seen = found
    now = gateway.now()
    if now - seen > settings_of(gateway).idle_seconds or seen > now + TOUCH_SECONDS:
        return None
    return await session_for_token(gateway, token, refresh=now - seen >= TOUCH_SECONDS)


async def session_for_token(gateway: Any, token: str, *, refresh: bool = False) -> Session | None:
    """The session a dashboard JWT stands for, None when it is invalid, revoked, its account disabled
    or its team member removed."""
    try:
        claims = dashboard_token_claims(gateway, token, gateway.now())
    except Unauthorized:
        return None
    row = await get_merchant(gateway.db, claims["sub"])
    if row is None or not row["enabled"] or int(row["token_version"]) != claims.get("tv", 0):
        return None
    if await dashboard_token_revoked(gateway, claims):
        return None
    principal = Principal(merchant_id=row["id"], via="jwt")
    if claims.get("mbr") is not None:
        try:  # the member's role, now (the JSON API's resolution)
            principal = await dashboard_principal(gateway, token)
        except ApiError:
            return None
    if principal.member_id is not None:  # a member's own 2FA: the code their forms ask for is theirs
        email, totp_on = principal.member_email, await member_totp_enabled(gateway.db, row["id"], principal.member_id)
    else:
        email, totp_on = row["email"], bool(row["totp_enabled"])
    return Session(merchant_id=row["id"], email=email or "", csrf=_mac(gateway, f"csrf{_SEP}{token}"),
                   totp_enabled=totp_on, refresh=refresh, expires_at=int(claims["exp"]),
                   token=token, principal=principal)


def has_session_cookie(request: web.Request) -> bool:
    return SESSION_COOKIE in request.cookies


async def ended_because(request: web.Request) -> str | None:
    """Why this browser's session cookie no longer signs it in, as a login-page notice code; None without one.

    Asked only once ``current_session`` said no. The most telling reason wins:
    a session signed out (``session-signed-out``), ended with all of the
    account's (``session-revoked``: a password change, sign-out everywhere)
    or of a disabled account (``account-disabled``) says so even when it would
    also have expired (``session-expired``, the JWT's 24 hours) or idled out
    (``idle``). A cookie that is not ours, or not a session, is
    ``session-invalid``.
    """
    if not has_session_cookie(request):
        return None
    gateway = request.app[GATEWAY]
    found = _cookie_parts(request)
    if found is None:
        return "session-invalid"
    token, _, seen = found
    try:  # now=0: any expiry passes here; it is judged below, after the reasons that matter more
        claims = dashboard_token_claims(gateway, token, 0)
    except Unauthorized:
        return "session-invalid"
    row = await get_merchant(gateway.db, claims["sub"])
    if row is None:
        return "session-invalid"
    if not row["enabled"]:
        return "account-disabled"
    if await dashboard_token_revoked(gateway, claims):
        return "session-signed-out"
    if claims.get("mbr") is not None and await gateway.hooks.decide_member(merchant_id=row["id"],
                                                                           member_id=claims["mbr"]) is None:
        return "member-removed"
    if int(row["token_version"]) != claims.get("tv", 0):
        return "session-revoked"
    now = gateway.now()
    if int(claims["exp"]) <= now:
        return "session-expired"
    if now - seen > settings_of(gateway).idle_seconds:
        return "idle"
    return "session-invalid"


def pre_token(request: web.Request) -> tuple[str, str | None]:
    """(CSRF token for a signed-out form, new ``orb_pre`` cookie value to set or None)."""
    current = request.cookies.get(PRE_COOKIE, "")
    fresh = None
    if len(current) < 16:
        current = fresh = secrets.token_urlsafe(24)
    return _mac(request.app[GATEWAY], f"pre{_SEP}{current}"), fresh


def set_pre_cookie(request: web.Request, response: web.StreamResponse, value: str | None) -> None:
    if value is not None:
        _cookie(response, request, PRE_COOKIE, value)


def _same_origin(request: web.Request) -> bool:
    """A browser's Origin (sent on every cross-site POST) must name this host; absent is allowed."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    host = origin.split("://", 1)[-1]
    return host == request.host


def check_csrf(request: web.Request, form: Any, session: Session | None) -> None:
    """Refuse a form whose token does not match this browser's session (or pre-session cookie)."""
    sent = form.get(CSRF_FIELD) if form is not None else None
    if not isinstance(sent, str) or not _same_origin(request):
        raise CsrfRefused()
    if session is not None:
        expected = session.csrf
    else:
        current = request.cookies.get(PRE_COOKIE, "")
        if len(current) < 16:
            raise CsrfRefused()
        expected = _mac(request.app[GATEWAY], f"pre{_SEP}{current}")
    if not hmac.compare_digest(sent.encode(), expected.encode()):
        raise CsrfRefused()
