"""The invitation's page: see an invitation, then join it with a proof of the address (``joining.py``).

Public (the visitor has no session yet) and served like every hosted page.
Opened with the join link mailed to the invited address, it asks for a
password and joins; opened with the invitation's page link (which the
inviter may hold), it only shows the invitation and offers the proofs: the
mailed link, or an identity provider signing the person in as that address
(the ``prove`` form, when ``decide_address_prover`` answers).

Its forms are CSRF-protected by a double-submit cookie: a random value in an
HttpOnly, SameSite=Strict cookie scoped to this path must come back in the
form, and a cross-site ``Origin`` is refused, so no other site can make a
browser join an account. Joining by password does not sign in: the new
member signs in with their e-mail and password on the dashboard's own
sign-in page, where its lockout and sign-in checks apply; joining through
the identity provider lands like any sign-in through it.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any, Mapping
from urllib.parse import urlencode

from aiohttp import web

from ...api import (
    ApiError, NotConfigured, ValidationError, gateway_of, html_page, rate_class, read_form, render_page,
)
from ...api.merchant import get_merchant
from . import invites, joining, mail

routes = web.RouteTableDef()
COOKIE = "orb_team_accept"
FIELD = "csrf_token"


def _csrf(request: web.Request) -> tuple[str, bool]:
    """This browser's form token, and whether the cookie must be set now."""
    current = request.cookies.get(COOKIE, "")
    return (current, False) if len(current) >= 24 else (secrets.token_urlsafe(24), True)


async def _page(request: web.Request, found: invites.Found, token: Any, *, status: int = 200,
                errors: Mapping[str, Any] | None = None) -> web.Response:
    gateway = gateway_of(request)
    invite = found.invite
    holder = await get_merchant(gateway.db, invite["merchant_id"])
    prover = await invites.address_prover(gateway)
    csrf, fresh = _csrf(request)
    response = render_page(request, "teams/accept.html", {
        "email": invite["email"], "role": invite["role"], "token": token, "by_mail": found.by_mail,
        "account": holder["email"] if holder is not None else "", "invited_by": invite["invited_by"],
        "mailed": int(invite["mails_sent"] or 0) > 0, "can_mail": mail.can_mail(gateway),
        "prover": prover.label if prover is not None else None,
        "errors": errors or {}, "csrf": csrf}, status=status)
    if fresh:
        response.set_cookie(COOKIE, csrf, path=invites.ACCEPT_PATH, httponly=True, samesite="Strict",
                            secure=request.secure or gateway.config.base_url.startswith("https://"))
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
        found = await invites.find(gateway_of(request), token)
    except ApiError as exc:
        return _refused(request, exc)
    return await _page(request, found, token)


@routes.post(invites.ACCEPT_PATH)
@rate_class("auth")
@html_page
async def accept(request: web.Request) -> web.StreamResponse:
    form = await read_form(request)
    if not _same_site(request, form):
        return render_page(request, "error.html", {
            "title": "Form expired", "message": "This form has expired or came from another site. Open the"
                                                " invitation link again. Nothing was changed."}, status=403)
    try:
        if form.get("action") == "prove":
            return await _to_prover(request, form)
        email = await joining.join_with_password(gateway_of(request), form)
    except ValidationError as exc:
        found = await invites.find(gateway_of(request), form.get("token"))
        return await _page(request, found, form.get("token"), status=exc.status, errors=exc.detail or {})
    except ApiError as exc:
        return _refused(request, exc)
    raise web.HTTPSeeOther("/app/login?" + urlencode({"email": email, "notice": "member-joined"}))


async def _to_prover(request: web.Request, form: Mapping[str, Any]) -> web.StreamResponse:
    """Off to the identity provider, to come back as the invited address (``joining.join_with_proof``)."""
    gateway = gateway_of(request)
    found = await invites.find(gateway, form.get("token"))
    prover = await invites.address_prover(gateway)
    if prover is None:
        raise NotConfigured("no identity provider is configured on this server: use the link e-mailed to you",
                            code="not_configured")
    redirect = await prover.start(joining.PURPOSE, str(found.invite["id"]))
    response = web.Response(status=303, headers={"Location": redirect.location, "Cache-Control": "no-store",
                                                 "Referrer-Policy": "no-referrer"})
    if redirect.prepare is not None:
        redirect.prepare(response)
    return response
