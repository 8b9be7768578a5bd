"""The invitation link's page: the invited person chooses a password, then signs in on the dashboard.

Public (the visitor has no session yet) and served like every hosted page.
Its form is CSRF-protected by a double-submit cookie: a random value in an
HttpOnly, SameSite=Strict cookie scoped to this path must come back in the
form, and a cross-site ``Origin`` is refused, so no other site can make a
browser accept an invitation (and sign in to someone else's account).
Accepting does not sign in: the new member signs in with their e-mail and
password on the dashboard's own sign-in page, where its lockout and
sign-in checks apply.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any, Mapping
from urllib.parse import urlencode

from aiohttp import web

from ...api import ApiError, ValidationError, gateway_of, html_page, rate_class, read_form, render_page
from . import invites

routes = web.RouteTableDef()
COOKIE = "orb_team_accept"
FIELD = "csrf_token"


def _csrf(request: web.Request) -> tuple[str, bool]:
    """This browser's form token, and whether the cookie must be set now."""
    current = request.cookies.get(COOKIE, "")
    return (current, False) if len(current) >= 24 else (secrets.token_urlsafe(24), True)


def _page(request: web.Request, context: Mapping[str, Any], *, status: int = 200) -> web.Response:
    token, fresh = _csrf(request)
    response = render_page(request, "teams/accept.html", {**context, "csrf": token}, status=status)
    if fresh:
        response.set_cookie(COOKIE, token, path=invites.ACCEPT_PATH, httponly=True, samesite="Strict",
                            secure=request.secure or gateway_of(request).config.base_url.startswith("https://"))
    return response


def _refused(request: web.Request, exc: ApiError) -> web.Response:
    return render_page(request, "error.html", {"title": "Invitation", "message": exc.message}, status=exc.status)


def _same_site(request: web.Request, form: Mapping[str, Any]) -> bool:
    origin = request.headers.get("Origin")
    if origin is not None and origin.split("://", 1)[-1] != request.host:
        return False
    sent, cookie = form.get(FIELD), request.cookies.get(COOKIE, "")
    return isinstance(sent, str) and len(cookie) >= 24 and hmac.compare_digest(sent.encode(), cookie.encode())


@routes.get(invites.ACCEPT_PATH)
@rate_class("auth")
@html_page
async def accept_page(request: web.Request) -> web.StreamResponse:
    token = request.query.get("token", "")
    try:
        invite = await invites.find(gateway_of(request), token)
    except ApiError as exc:
        return _refused(request, exc)
    return _page(request, {"email": invite["email"], "role": invite["role"], "token": token})


@routes.post(invites.ACCEPT_PATH)
@rate_class("auth")
@html_page
async def accept(request: web.Request) -> web.StreamResponse:
    form = await read_form(request)
    if not _same_site(request, form):
        return render_page(request, "error.html", {
            "title": "Form expired", "message": "This form has expired or came from another site. Open the"
                                                " invitation link again. Nothing was changed."}, status=403)
    gateway = gateway_of(request)
    try:
        email = await invites.accept(gateway, form)
    except ValidationError as exc:
        invite = await invites.find(gateway, form.get("token"))
        return _page(request, {"email": invite["email"], "role": invite["role"], "token": form.get("token"),
                               "errors": exc.detail or {}}, status=exc.status)
    except ApiError as exc:
        return _refused(request, exc)
    raise web.HTTPSeeOther("/app/login?" + urlencode({"email": email, "notice": "member-joined"}))
