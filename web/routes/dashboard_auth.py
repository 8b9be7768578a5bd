"""Dashboard sign-up, sign-in and the account record (SPEC 4.7, 5.3).

``turnstile_token`` is validated here but judged by plugins: both routes ask
the ``check_sign_in`` hook before any account work, and a captcha plugin
(``plugins/captcha``) refuses there with 403 ``captcha_failed``; a sign-in
that passed its challenge (``decide_sign_in_challenge``) is not refused by
the e-mail's password lockout. A person with 2FA on also sends
``totp_code`` (their authenticator's code or a recovery code): 401
``totp_required`` until they do (issue 42; a deliberate difference from
SPEC, docs/api.md).
"""

from __future__ import annotations

from typing import Any, Mapping

from aiohttp import web

from ...core.accounts import merchants as accounts
from ...core.types.errors import ValidationError
from ...core.pages.services import screen_sign_in
from ...core.accounts.passwords import password_problem
from ..auth import principal_of, requires
from ..envelope import envelope, read_json
from ..keys import gateway_of
from ..middlewares import client_ip, rate_class
from ..validation import Field, validate

routes = web.RouteTableDef()


def password_field(body: Mapping[str, Any], name: str, errors: dict[str, str], *, check_length: bool = True) -> str:
    """A password exactly as sent: never stripped; when ``check_length`` (a new password)
    8-128 characters, not only whitespace and not a common password."""
    value = body.get(name)
    if not isinstance(value, str) or not value:
        errors[name] = "is required" if value in (None, "") else "must be a string"
        return ""
    problem = password_problem(value) if check_length else None
    if problem:
        errors[name] = problem
    elif len(value) > 1024:
        errors[name] = "is too long"
    return value


def validate_with_passwords(body: Mapping[str, Any], fields: list[Field], passwords: dict[str, bool]) -> dict[str, Any]:
    """``validate`` plus password fields (name -> check 8-128 length), all errors in one 400."""
    errors: dict[str, str] = {}
    try:
        clean = validate(body, fields)
    except ValidationError as exc:
        errors.update(exc.detail or {})
        clean = {}
    for name, check_length in passwords.items():
        clean[name] = password_field(body, name, errors, check_length=check_length)
    if errors:
        raise ValidationError(errors)
    return clean


def _ref(body: Mapping[str, Any]) -> str | None:
    # Bad referrer values are silently ignored (SPEC 4.7), never a 400.
    value = body.get("ref")
    return value.strip() if isinstance(value, str) and 0 < len(value.strip()) <= 64 else None


@routes.post("/dashboard/auth/signup")
@rate_class("auth")
async def signup(request: web.Request) -> web.Response:
    body = await read_json(request)
    clean = validate_with_passwords(
        body, [Field("email", "email", required=True, max_len=254), Field("turnstile_token", max_len=4096)],
        {"password": True})
    await screen_sign_in(gateway_of(request), "signup", body, client_ip(request))
    result = await accounts.sign_up(gateway_of(request), clean["email"], clean["password"], _ref(body))
    return envelope({
        "token": result.token,
        "merchant_id": result.merchant_id,
        "email": result.email,
        "api_keys": dict(result.api_keys),
    })


@routes.post("/dashboard/auth/login")
@rate_class("auth")
async def login(request: web.Request) -> web.Response:
    body = await read_json(request)
    clean = validate_with_passwords(
        body, [Field("email", required=True, max_len=254), Field("turnstile_token", max_len=4096)], {"password": False})
    challenged = await screen_sign_in(gateway_of(request), "login", body, client_ip(request))
    # Whoever has their own 2FA on (the holder or a team member) also sends totp_code: 401 totp_required until then.
    row, token = await accounts.log_in(gateway_of(request), clean["email"], clean["password"], body.get("totp_code"),
                                       challenged=challenged)
    return envelope({"token": token, "merchant_id": row["id"], "email": row["email"]})


@routes.get("/dashboard/account")
@requires("jwt")
async def account(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    row = await accounts.require_merchant(gateway.db, principal_of(request).merchant_id)
    return envelope({"account": accounts.account_view(gateway, row)})
