"""The code step after the provider, for whoever has their own 2FA on: the account holder or a team member.

The provider proves who the person is; their own second factor is asked
as their password sign-in asks it, through the core's pending sign-in
(``begin_sign_in_step``/``finish_sign_in_step``, the machinery of the
dashboard's password page too), with its lockout and recovery codes. The
callback records the step with the landing's browser binding as its
context and hands the browser the step's secret in an HttpOnly,
SameSite=Strict cookie scoped to this path: it never appears in a URL, and
no other site can plant its own step in a victim's browser or post this
form cross-site. A wrong code leaves the step in place (the lockout
counts); the right one spends it (once, in any worker) and lands like any
sign-in (``landings.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from ...api import (
    ApiError, MemberRemoved, SecondFactorDue, SignInStepSpent, begin_sign_in_step,
    finish_sign_in_step, gateway_of, html_page, rate_class, read_form, render_page,
)
from . import landings
from .config import provider_of
from .members import METHOD

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

    from .settings import OidcSettings

STEP_PATH = "/dashboard/auth/google/2fa"
COOKIE_NAME = "orbchain_oidc_2fa"
TEMPLATE = "oidc/second_factor.html"
routes = web.RouteTableDef()


async def begin(gateway: "Gateway", due: SecondFactorDue, binding_hash: str, settings: "OidcSettings",
                response: web.StreamResponse) -> None:
    """Record the step for ``due`` and give the browser its cookie on ``response``."""
    secret = await begin_sign_in_step(gateway, due, method=METHOD, context=binding_hash,
                                      ttl_seconds=settings.login_ttl_seconds)
    response.set_cookie(COOKIE_NAME, secret, max_age=settings.login_ttl_seconds, path=STEP_PATH, httponly=True,
                        samesite="Strict", secure=settings.redirect_uri.startswith("https:"))


def _form(request: web.Request, error: str | None = None, status: int = 200) -> web.Response:
    response = render_page(request, TEMPLATE, {"action": STEP_PATH, "error": error}, status=status)
    response.headers["Cache-Control"] = "no-store"
    return response


def _message(exc: ApiError) -> str:
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
        raise SignInStepSpent()
    form = await read_form(request)
    try:
        session, binding = await finish_sign_in_step(gateway, request.cookies.get(COOKIE_NAME), form.get("totp_code"))
    except (SignInStepSpent, MemberRemoved):
        raise
    except ApiError as exc:
        return _form(request, _message(exc), exc.status)
    response = await landings.send_to_app(gateway, binding, session, provider.settings)
    response.headers["Cache-Control"] = "no-store"
    response.del_cookie(COOKIE_NAME, path=STEP_PATH)
    return response
