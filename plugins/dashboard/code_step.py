"""The sign-in page's second step: a person with 2FA on types their code before the browser gets a session.

The sign-in form proves the password; for the account holder or a team
member whose own 2FA is on, ``log_in`` answers ``SecondFactorRequired``
instead of a token. :func:`begin` records the pending sign-in with the
core (``begin_sign_in_step``: the same machinery the identity provider's
step uses) and sends the browser to ``/app/login/code`` holding the step's
secret in an HttpOnly, SameSite=Strict cookie on that path only, so no
other site can plant or post a step and the secret never sits in a URL.
The code (or a recovery code) posted there finishes the step; a wrong one
keeps it (the person's TOTP lockout counts), an expired or spent one sends
the browser back to the sign-in page. No script anywhere.
"""

from __future__ import annotations

from aiohttp import web

from ...api import (
    GATEWAY, ApiError, MemberRemoved, SecondFactorDue, SignInStepSpent, begin_sign_in_step, finish_sign_in_step,
    html_page, rate_class, read_form,
)
from .session import CsrfRefused, check_csrf, current_session, is_https, pre_token, set_pre_cookie, start_session
from .views import error_text, forbidden_form, render, see_other

routes = web.RouteTableDef()

PATH = "/app/login/code"
COOKIE = "orb_sign_in_step"
TEMPLATE = "dashboard/sign_in_code.html"
STEP_SECONDS = 5 * 60


async def begin(request: web.Request, due: SecondFactorDue, next_path: str) -> web.HTTPException:
    """The 303 to the code page, with the pending step's cookie; ``next_path`` is where the session then goes."""
    secret = await begin_sign_in_step(request.app[GATEWAY], due, method="password", context=next_path,
                                      ttl_seconds=STEP_SECONDS)
    response = see_other(PATH)
    response.set_cookie(COOKIE, secret, path=PATH, httponly=True, samesite="Strict", secure=is_https(request),
                        max_age=STEP_SECONDS)
    response.headers["Cache-Control"] = "no-store"
    return response


def _page(request: web.Request, *, status: int = 200, error: str | None = None) -> web.Response:
    token, fresh = pre_token(request)
    response = render(request, None, TEMPLATE, {"pre_csrf": token, "error": error, "action": PATH}, status=status)
    set_pre_cookie(request, response, fresh)
    response.headers["Cache-Control"] = "no-store"
    return response


def _back_to_sign_in(notice: str) -> web.HTTPException:
    response = see_other("/app/login", notice)
    response.del_cookie(COOKIE, path=PATH)
    return response


@routes.get(PATH)
@html_page
async def code_page(request: web.Request) -> web.StreamResponse:
    if await current_session(request) is not None:
        raise see_other("/app")
    if not request.cookies.get(COOKIE):
        raise see_other("/app/login")
    return _page(request)


@routes.post(PATH)
@rate_class("auth")
@html_page
async def finish(request: web.Request) -> web.StreamResponse:
    form = await read_form(request)
    try:
        check_csrf(request, form, None)
    except CsrfRefused:
        return forbidden_form(request)
    try:
        session, next_path = await finish_sign_in_step(request.app[GATEWAY], request.cookies.get(COOKIE),
                                                       form.get("totp_code"))
    except SignInStepSpent:
        raise _back_to_sign_in("sign-in-step-ended") from None
    except MemberRemoved:
        raise _back_to_sign_in("member-removed") from None
    except ApiError as exc:
        return _page(request, status=exc.status, error=error_text(exc))
    response = see_other(next_path or "/app")
    start_session(request, response, session.token)
    response.del_cookie(COOKIE, path=PATH)
    raise response
