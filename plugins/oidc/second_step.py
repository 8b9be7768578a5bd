"""The code step after the provider, for a team member with their own 2FA on.

The provider proves who the person is; a member's own second factor is
asked as their password sign-in asks it (``check_member_sign_in``, with its
lockout). The callback records the pending sign-in in
``oidc_second_factor`` (a hash of a random value, the member, the landing's
browser binding) and hands the browser that value in an HttpOnly,
SameSite=Strict cookie scoped to the step's path: it never appears in a
URL, and no other site can plant its own step in a victim's browser or post
this form cross-site. A wrong code leaves the step in place (the lockout
counts); the right one spends it (``DELETE ... RETURNING``: once, in any
worker) and lands like any sign-in (``landings.py``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ...api import (
    AccountSession, ApiError, InvalidRequest, ValidationError, check_member_sign_in, gateway_of, html_page,
    rate_class, read_form, render_page, sign_in_member,
)
from . import landings
from .config import provider_of
from .logins import keep_hashed, secret_hash
from .members import METHOD, MemberRemoved, SecondFactorDue, current_member

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

    from .settings import OidcSettings

STEP_PATH = "/dashboard/auth/google/2fa"
COOKIE_NAME = "orbchain_oidc_2fa"
TEMPLATE = "oidc/second_factor.html"
_SECRET = re.compile(r"^[A-Za-z0-9_-]{32,128}$")
routes = web.RouteTableDef()


class StepSpent(InvalidRequest):
    def __init__(self) -> None:
        super().__init__("this sign-in has expired or was finished already; please sign in again",
                         code="invalid_state")


async def begin(gateway: "Gateway", due: SecondFactorDue, binding_hash: str, settings: "OidcSettings",
                response: web.StreamResponse) -> None:
    """Record the step for ``due`` and give the browser its cookie on ``response``."""
    secret = await keep_hashed(gateway, "oidc_second_factor", {
        "binding_hash": binding_hash, "merchant_id": due.merchant_id, "member_id": due.member_id,
        "email": due.email}, settings.login_ttl_seconds)
    response.set_cookie(COOKIE_NAME, secret, max_age=settings.login_ttl_seconds, path=STEP_PATH, httponly=True,
                        samesite="Strict", secure=settings.redirect_uri.startswith("https:"))


async def finish(gateway: "Gateway", secret: Any, code: Any) -> tuple[AccountSession, str]:
    """The member's session once ``code`` is theirs, and the landing's browser binding.

    400 ``invalid_state`` for an unknown, expired or spent step; 403
    ``member_removed``; what ``check_member_sign_in`` raises for the code
    (400 missing, 401 ``totp_invalid``, 429 locked), the step then kept.
    """
    if not isinstance(secret, str) or not _SECRET.match(secret):
        raise StepSpent()
    key = secret_hash(secret)
    row = await gateway.db.fetch_one("SELECT * FROM oidc_second_factor WHERE step_hash = :h", {"h": key})
    if row is None or int(row["expires_at"]) <= gateway.now():
        raise StepSpent()
    member = await current_member(gateway, row["merchant_id"], row["member_id"])
    if member is None:
        raise MemberRemoved()
    await check_member_sign_in(gateway, row["merchant_id"], row["member_id"], code)
    spent = await gateway.db.fetch_one("DELETE FROM oidc_second_factor WHERE step_hash = :h RETURNING step_hash",
                                       {"h": key})
    if spent is None:  # another request finished it a moment ago
        raise StepSpent()
    session = await sign_in_member(gateway, row["merchant_id"], row["member_id"], member.email, method=METHOD)
    return session, row["binding_hash"]


def _form(request: web.Request, error: str | None = None, status: int = 200) -> web.Response:
    response = render_page(request, TEMPLATE, {"action": STEP_PATH, "error": error}, status=status)
    response.headers["Cache-Control"] = "no-store"
    return response


def _message(exc: ApiError) -> str:
    if isinstance(exc, ValidationError) and isinstance(exc.detail, dict) and exc.detail.get("totp_code"):
        return f"Code: {exc.detail['totp_code']}"
    return exc.message[:1].upper() + exc.message[1:]


@routes.get(STEP_PATH)
@rate_class("auth")
@html_page
async def step_page(request: web.Request) -> web.StreamResponse:
    return _form(request)


@routes.post(STEP_PATH)
@rate_class("auth")
@html_page
async def step(request: web.Request) -> web.StreamResponse:
    gateway = gateway_of(request)
    provider = provider_of(gateway)
    origin = request.headers.get("Origin")
    if provider is None or (origin is not None and origin.split("://", 1)[-1] != request.host):
        raise StepSpent()
    form = await read_form(request)
    try:
        session, binding = await finish(gateway, request.cookies.get(COOKIE_NAME), form.get("totp_code"))
    except (StepSpent, MemberRemoved):
        raise
    except ApiError as exc:
        return _form(request, _message(exc), exc.status)
    response = await landings.send_to_app(gateway, binding, session, provider.settings)
    response.headers["Cache-Control"] = "no-store"
    response.del_cookie(COOKIE_NAME, path=STEP_PATH)
    return response
