"""Sign-up, sign-in, sign-out and the sign-in fragments (SPEC 4.7, 4.13, 5.3) for a browser.

The forms post to these pages, which call the same core functions as
``POST /dashboard/auth/signup`` and ``/login`` (the ``check_sign_in`` hook
included, so a captcha plugin judges them too) and then hold the resulting
JWT in the session cookie (``session.py``), never in the page.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Mapping

from aiohttp import web

from ...core import accounts
from ...core.errors import ApiError
from ...core.plugins import call_first
from ...web.keys import GATEWAY
from ...web.middlewares import client_ip, rate_class
from ...web.pages import html_page
from ...web.routes.dashboard_auth import validate_with_passwords
from ...web.validation import Field
from .session import (CsrfRefused, check_csrf, current_session, end_session, pre_token, session_for_token,
                      set_pre_cookie, start_session, was_idle)
from .sign_in_widget import widget_for
from .views import error_text, forbidden_form, render, see_other, signed_in

routes = web.RouteTableDef()

EMAIL = Field("email", "email", required=True, max_len=254)
TOKEN = Field("turnstile_token", max_len=4096)
# The Turnstile widget names its field this; the JSON API calls it turnstile_token (SPEC 5.3).
WIDGET_FIELD = "cf-turnstile-response"


def safe_next(value: Any) -> str:
    """Where to go after signing in: a dashboard path only, never another site."""
    if isinstance(value, str) and value.startswith("/app") and not value.startswith("//") and "\\" not in value:
        return value
    return "/app"


def _body(form: Mapping[str, Any]) -> dict[str, Any]:
    body = {name: form.get(name) for name in ("email", "password", "ref")}
    token = form.get(WIDGET_FIELD) or form.get("turnstile_token")
    if token:
        body["turnstile_token"] = token
    return body


async def _auth_page(request: web.Request, template: str, *, status: int = 200, error: str | None = None,
                     values: Mapping[str, Any] | None = None) -> web.Response:
    token, fresh = pre_token(request)
    widget = await widget_for(request.app[GATEWAY])
    response = render(request, None, template, {
        "pre_csrf": token, "error": error, "values": values or {}, "widget": widget, "fragment_fallback": True,
        "next": safe_next(request.query.get("next") or (values or {}).get("next")),
    }, status=status, script_origin=widget.origin if widget else None)
    set_pre_cookie(request, response, fresh)
    return response


async def _check_sign_in(request: web.Request, action: str, body: Mapping[str, Any]) -> None:
    gateway = request.app[GATEWAY]
    await call_first(gateway.pm, "check_sign_in", gateway=gateway, action=action, body=body,
                     client_ip=client_ip(request))


async def _read_form(request: web.Request) -> Any:
    form = await request.post()
    check_csrf(request, form, None)
    return form


@routes.get("/app/login")
@html_page
async def login_page(request: web.Request) -> web.StreamResponse:
    if await current_session(request) is not None:
        raise see_other(safe_next(request.query.get("next")))
    response = await _auth_page(request, "dashboard/login.html")
    if was_idle(request):
        end_session(response)
    return response


@routes.post("/app/login")
@rate_class("auth")
@html_page
async def login(request: web.Request) -> web.StreamResponse:
    try:
        form = await _read_form(request)
    except CsrfRefused:
        return forbidden_form(request)
    values = {"email": form.get("email", ""), "next": form.get("next", "")}
    try:
        body = _body(form)
        clean = validate_with_passwords(body, [Field("email", required=True, max_len=254), TOKEN], {"password": False})
        await _check_sign_in(request, "login", body)
        _, token = await accounts.log_in(request.app[GATEWAY], clean["email"], clean["password"])
    except ApiError as exc:
        return await _auth_page(request, "dashboard/login.html", status=exc.status, error=error_text(exc),
                                values=values)
    response = see_other(safe_next(form.get("next")))
    start_session(request, response, token)
    raise response


@routes.get("/app/signup")
@html_page
async def signup_page(request: web.Request) -> web.StreamResponse:
    if await current_session(request) is not None:
        raise see_other("/app")
    return await _auth_page(request, "dashboard/signup.html", values={"ref": request.query.get("ref", "")})


@routes.post("/app/signup")
@rate_class("auth")
@html_page
async def signup(request: web.Request) -> web.StreamResponse:
    try:
        form = await _read_form(request)
    except CsrfRefused:
        return forbidden_form(request)
    values = {"email": form.get("email", ""), "ref": form.get("ref", "")}
    try:
        body = _body(form)
        clean = validate_with_passwords(body, [EMAIL, TOKEN], {"password": True})
        await _check_sign_in(request, "signup", body)
        ref = body.get("ref")
        ref = ref.strip() if isinstance(ref, str) and 0 < len(ref.strip()) <= 64 else None
        result = await accounts.sign_up(request.app[GATEWAY], clean["email"], clean["password"], ref)
    except ApiError as exc:
        return await _auth_page(request, "dashboard/signup.html", status=exc.status, error=error_text(exc),
                                values=values)
    return await _show_new_keys(request, result.token, dict(result.api_keys))


async def _show_new_keys(request: web.Request, token: str, api_keys: Mapping[str, str]) -> web.Response:
    """The one time the three API keys are shown (SPEC 5.1), in the response that signs the browser in."""
    session = await session_for_token(request.app[GATEWAY], token)
    if session is None:
        raise see_other("/app/login")
    response = render(request, session, "dashboard/welcome.html", {"api_keys": api_keys})
    start_session(request, response, token)
    return response


@routes.post("/app/logout")
@signed_in
async def logout(request: web.Request, session: Any, form: Any) -> web.StreamResponse:
    response = see_other("/app/login", "signed-out")
    end_session(response)
    raise response


# -- fragments: #google-auth=<payload> and #tg-link=<token> (SPEC 4.7, 4.13) -------------------


def google_auth_payload(value: str) -> tuple[str | None, dict[str, str]]:
    """(dashboard JWT, api_keys) from the identity-provider fragment.

    The payload is the JWT itself, or base64url JSON (or JSON) with ``token``
    and, for a new account, ``api_keys``: all three shapes are accepted so the
    sign-in plugin may choose. Anything else yields no token.
    """
    value = value.strip()
    if value.count(".") == 2 and not value.startswith("{"):
        return value, {}
    text = value
    if not value.startswith("{"):
        try:
            text = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None, {}
    try:
        data = json.loads(text)
    except ValueError:
        return None, {}
    if not isinstance(data, dict) or not isinstance(data.get("token"), str):
        return None, {}
    keys = data.get("api_keys")
    keys = {str(k): str(v) for k, v in keys.items()} if isinstance(keys, dict) else {}
    return data["token"], keys


@routes.post("/app/fragment")
@html_page
async def fragment(request: web.Request) -> web.StreamResponse:
    """What the page's script posts from the URL fragment (which never reaches the server by itself)."""
    session = await current_session(request)
    form = await request.post()
    try:
        check_csrf(request, form, session)
    except CsrfRefused:
        return forbidden_form(request)
    kind, value = form.get("kind"), form.get("value")
    if not isinstance(value, str) or not value or len(value) > 8192:
        raise see_other("/app")
    if kind == "google-auth":
        token, keys = google_auth_payload(value)
        if token is None or await session_for_token(request.app[GATEWAY], token) is None:
            return await _auth_page(request, "dashboard/login.html", status=401,
                                    error="That sign-in link is not valid any more. Please sign in again.")
        if keys:
            return await _show_new_keys(request, token, keys)
        response = see_other("/app")
        start_session(request, response, token)
        raise response
    if kind == "tg-link":
        if session is None:
            return await _auth_page(request, "dashboard/login.html", status=401,
                                    error="Sign in first, then open the Telegram link again.")
        return await _link_chat(request, session, value)
    raise see_other("/app")


async def _link_chat(request: web.Request, session: Any, token: str) -> web.Response:
    """Bind a Telegram chat through the service the messaging plugin offers (``gateway.services["tg_link"]``)."""
    service = request.app[GATEWAY].services.get("tg_link")
    if service is None:
        return render(request, session, "dashboard/message.html",
                      {"title": "Telegram", "error": "Telegram linking is not enabled on this server."}, status=503)
    try:
        await service.complete(request.app[GATEWAY], session.merchant_id, token)
    except ApiError as exc:
        return render(request, session, "dashboard/message.html", {"title": "Telegram", "error": error_text(exc)},
                      status=exc.status)
    return render(request, session, "dashboard/message.html",
                  {"title": "Telegram", "message": "Your Telegram chat is linked to this account."})
