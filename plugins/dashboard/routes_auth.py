"""Sign-up, sign-in, sign-out and the sign-in fragments (SPEC 4.7, 4.13, 5.3) for a browser.

The forms post to these pages, which call the same core functions as
``POST /dashboard/auth/signup`` and ``/login`` (the ``check_sign_in`` hook
included, so a captcha plugin judges them too) and then hold the resulting
JWT in the session cookie (``session.py``), never in the page. A person
with 2FA on types their code on the next page (``code_step.py``) before
the browser is signed in.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any, Mapping, Protocol
from urllib.parse import unquote

from aiohttp import web

from ...api import (
    EVERYONE, MAX_BRAND_NAME_LENGTH, ApiError, Field, GATEWAY, InvalidRequest, NotConfigured, SecondFactorRequired,
    client_ip, html_page, rate_class, read_form, screen_sign_in, widget_token,
)
from ...api import ServiceKey
from ...api.merchant import log_in, set_display_name, sign_up, validate_with_passwords
from .session import (CsrfRefused, check_csrf, current_session, end_session, has_session_cookie, pre_token,
                      session_for_token, set_pre_cookie, sign_out, start_session)
from . import code_step
from .sign_in_widget import widget_for
from .views import error_text, forbidden_form, render, see_other, signed_in

routes = web.RouteTableDef()

EMAIL = Field("email", "email", required=True, max_len=254)
TOKEN = Field("turnstile_token", max_len=4096)
# The shop's name payers see on the hosted pages (Settings' display_name), asked at sign-up (issue 49 item 4);
# left empty, the dashboard's home asks again.
SHOP_NAME = Field("display_name", max_len=MAX_BRAND_NAME_LENGTH)


MAX_NEXT_LENGTH = 512


class Landings(Protocol):
    """The oidc plugin's ``"oidc_landing"`` service, as far as the dashboard uses it (it cannot import that plugin)."""

    async def redeem(self, gateway: Any, landing: str, token: str, cookies: Mapping[str, str]) -> str: ...

    def forget(self, response: web.StreamResponse) -> None: ...


class ChatLinks(Protocol):
    """The telegram plugin's ``"tg_link"`` service, as far as the dashboard uses it."""

    def confirmation_path(self, token: str) -> str: ...


OIDC_LANDING = ServiceKey[Landings]("oidc_landing")  # present when identity-provider sign-in is configured
TG_LINK = ServiceKey[ChatLinks]("tg_link")  # present when the Telegram bot is configured


def safe_next(value: Any) -> str:
    """Where to go after signing in: a dashboard path only (of a sane length), never another site."""
    if isinstance(value, str) and value.startswith("/app") and not value.startswith("//") and "\\" not in value \
            and len(value) <= MAX_NEXT_LENGTH:
        return value
    return "/app"


def _body(form: Mapping[str, Any]) -> dict[str, Any]:
    body = {name: form.get(name) for name in ("email", "password", "ref")}
    token = widget_token(form)  # the widget's field; the JSON API calls it turnstile_token (SPEC 5.3)
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


async def _read_form(request: web.Request) -> Any:
    form = await read_form(request)
    check_csrf(request, form, None)
    return form


@routes.get("/app/login")
@html_page
async def login_page(request: web.Request) -> web.StreamResponse:
    if await current_session(request) is not None:
        raise see_other(safe_next(request.query.get("next")))
    email = request.query.get("email", "")[:254]  # prefilled after joining a team (escaped by the template)
    response = await _auth_page(request, "dashboard/login.html", values={"email": email})
    if has_session_cookie(request):  # a session that ended (current_session said no): forget its cookie
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
        challenged = await screen_sign_in(request.app[GATEWAY], "login", body, client_ip(request))
        _, token = await log_in(request.app[GATEWAY], clean["email"], clean["password"], form.get("totp_code"),
                                challenged=challenged)
    except SecondFactorRequired as due:  # the password was right: the person's own code next, on its own page
        raise await code_step.begin(request, due.due, safe_next(form.get("next"))) from None
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
    values = {"email": form.get("email", ""), "ref": form.get("ref", ""), "display_name": form.get("display_name", "")}
    try:
        body = {**_body(form), "display_name": (form.get("display_name") or "").strip()}
        clean = validate_with_passwords(body, [EMAIL, TOKEN, SHOP_NAME], {"password": True})
        await screen_sign_in(request.app[GATEWAY], "signup", body, client_ip(request))
        ref = body.get("ref")
        ref = ref.strip() if isinstance(ref, str) and 0 < len(ref.strip()) <= 64 else None
        result = await sign_up(request.app[GATEWAY], clean["email"], clean["password"], ref)
        if clean.get("display_name"):
            await set_display_name(request.app[GATEWAY], result.merchant_id, clean["display_name"])
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
@signed_in(scope=EVERYONE)
async def logout(request: web.Request, session: Any, form: Any) -> web.StreamResponse:
    response = see_other("/app/login", "signed-out")
    await sign_out(request, response, session)
    raise response


# -- fragments: #google-auth=<payload> and #tg-link=<token> (SPEC 4.7, 4.13) -------------------


@dataclass(frozen=True)
class GoogleAuth:
    """What the sign-in plugin's ``#google-auth=`` payload carries (docs/oidc.md)."""

    token: str
    merchant_id: str
    landing: str  # redeemed through the plugin's ``oidc_landing`` service: this browser's sign-in, once
    api_keys: Mapping[str, str]  # only for a new account: shown once, on the page that signs it in


_B64URL = re.compile(r"^[A-Za-z0-9_-]+$")
_KEY_NAMES = frozenset({"merchant_api_key", "payout_api_key", "general_api_key"})


def google_auth_payload(value: str) -> GoogleAuth | None:
    """The oidc plugin's payload: unpadded base64url of a JSON object, else None.

    ``{token, merchant_id, email, new_account, landing, api_keys?}``:
    ``token``, ``merchant_id`` and ``landing`` strings, ``new_account`` a
    boolean, ``api_keys`` (the three legacy keys) only when ``new_account`` is
    true. One format, so a malformed or hand-made value is refused rather
    than guessed at.
    """
    if not _B64URL.match(value) or len(value) % 4 == 1:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
    except (binascii.Error, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not all(isinstance(data.get(name), str) for name in ("token", "merchant_id",
                                                                                          "landing")) \
            or not isinstance(data.get("new_account"), bool):
        return None
    keys = data.get("api_keys", {})
    if not isinstance(keys, dict) or (keys and not data["new_account"]):
        return None
    if keys and (set(keys) != _KEY_NAMES or not all(isinstance(v, str) for v in keys.values())):
        return None
    return GoogleAuth(token=data["token"], merchant_id=data["merchant_id"], landing=data["landing"], api_keys=keys)


_PASTED = re.compile(r"(?:^|#)(google-auth|tg-link)=([^#\s]+)$")


def pasted_link(text: str) -> tuple[str | None, str]:
    """(kind, value) from what a browser without JavaScript pasted: the whole link or the part after ``#``."""
    found = _PASTED.search(text.strip())
    if found is None:
        return None, ""
    return found.group(1), unquote(found.group(2))


@routes.post("/app/fragment")
@html_page
async def fragment(request: web.Request) -> web.StreamResponse:
    """What the page's script posts from the URL fragment (which never reaches the server by itself)."""
    session = await current_session(request)
    form = await read_form(request)
    try:
        check_csrf(request, form, session)
    except CsrfRefused:
        return forbidden_form(request)
    kind, value = form.get("kind"), form.get("value")
    if not kind and isinstance(value, str) and len(value) <= 8192:
        kind, value = pasted_link(value)
    if not isinstance(value, str) or not value or len(value) > 8192:
        raise see_other("/app")
    if kind == "google-auth":
        return await _google_sign_in(request, session, value)
    if kind == "tg-link":
        return await _confirm_chat_link(request, session, value)
    raise see_other("/app")


async def _google_sign_in(request: web.Request, session: Any, value: str) -> web.StreamResponse:
    """Sign the browser in with the identity provider's payload; a new account sees its keys this once.

    The payload counts only in the browser that started that sign-in, once:
    the oidc plugin's ``oidc_landing`` service judges it (login CSRF, issue
    29). Refused, the browser stays as it was, signed in or not.
    """
    gateway = request.app[GATEWAY]
    service = gateway.services.get(OIDC_LANDING)
    found = google_auth_payload(value)
    try:
        if service is None:
            raise NotConfigured("sign-in with an identity provider is not enabled on this server")
        if found is None:
            raise InvalidRequest("that sign-in link is not valid, so nothing changed. Please sign in again")
        merchant_id = await service.redeem(gateway, found.landing, found.token, request.cookies)
    except ApiError as exc:
        return await _refused_sign_in(request, session, exc)
    landed = await session_for_token(gateway, found.token)
    if landed is None or landed.merchant_id != merchant_id or merchant_id != found.merchant_id:
        return await _refused_sign_in(request, session, InvalidRequest(
            "that sign-in is not valid any more, so nothing changed. Please sign in again"))
    if found.api_keys:
        response = await _show_new_keys(request, found.token, found.api_keys)
    else:
        response = see_other("/app")
        start_session(request, response, found.token)
    service.forget(response)
    if isinstance(response, web.HTTPException):
        raise response
    return response


async def _refused_sign_in(request: web.Request, session: Any, exc: ApiError) -> web.Response:
    """Say why a sign-in payload was not taken; a signed-in browser keeps its own session and page."""
    text = error_text(exc).rstrip(".") + "."
    if session is None:
        return await _auth_page(request, "dashboard/login.html", status=exc.status, error=text)
    return render(request, session, "dashboard/message.html", {"title": "Sign-in refused", "error": text},
                  status=exc.status)


async def _confirm_chat_link(request: web.Request, session: Any, token: str) -> web.StreamResponse:
    """Never links anything: sends the browser to the messaging plugin's confirmation page.

    That page (``gateway.services[TG_LINK].confirmation_path(token)``)
    names the chat and asks for the password or a code; a link a signed-in
    user merely opens must not change what can reach the account. Signed
    out, the login page leads there after signing in.
    """
    service = request.app[GATEWAY].services.get(TG_LINK)
    if service is None:
        return render(request, session, "dashboard/message.html",
                      {"title": "Telegram", "error": "Telegram linking is not enabled on this server."}, status=503)
    target = service.confirmation_path(token)
    if session is None:
        return await _auth_page(request, "dashboard/login.html", status=401, values={"next": target},
                                error="Sign in first: you will then be asked to confirm the Telegram link.")
    raise see_other(target)
