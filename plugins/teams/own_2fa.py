"""A member's own two-factor authentication over the JSON API: ``/dashboard/team/me/mfa/*``.

The JSON twin of the member's Security page, shaped like the holder's
``/dashboard/mfa/*`` (setup, verify, disable, recovery-codes; the same bodies
and answers: verify's carries the member's recovery codes, shown once).
The holder's routes need ``account:credentials``, which no role grants, so
members get their own; these need no scope at all (``EVERYONE``): a member
whom "require two-factor authentication" limited to reading must still be
able to set it up. The account holder is sent to ``/dashboard/mfa/*``.
"""

from __future__ import annotations

from aiohttp import web

from ...api import EVERYONE, Forbidden, Principal, ValidationError, envelope, gateway_of, principal_of, qr_data_uri, \
    read_json, requires
from ...api.merchant import (
    disable_member_totp, enable_member_totp, normalize_totp_code, renew_recovery_codes, start_member_totp_setup,
)

routes = web.RouteTableDef()
BASE = "/dashboard/team/me/mfa"


def _member(request: web.Request) -> tuple[str, str, str]:
    """The calling member's account, id and e-mail; 403 ``not_a_member`` for the holder."""
    principal: Principal = principal_of(request)
    if principal.member_id is None or principal.member_email is None:
        raise Forbidden("these are a team member's own routes: the account holder's two-factor authentication is"
                        " at /dashboard/mfa/*", code="not_a_member")
    return principal.merchant_id, principal.member_id, principal.member_email


async def _code(request: web.Request) -> str:
    code = normalize_totp_code((await read_json(request)).get("code"))
    if code is None:
        raise ValidationError({"code": "must be a 6-digit code"})
    return code


@routes.post(f"{BASE}/setup")
@requires("jwt", scope=EVERYONE)
async def setup(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    secret, url = await start_member_totp_setup(gateway, *_member(request))
    qr = await qr_data_uri(gateway.cpu, url, cache=False)  # the URL carries the TOTP secret
    return envelope({"secret": secret, "otpauth_url": url, "qr_code": qr})


@routes.post(f"{BASE}/verify")
@requires("jwt", scope=EVERYONE)
async def verify(request: web.Request) -> web.Response:
    codes = await enable_member_totp(gateway_of(request), *_member(request), await _code(request))
    return envelope({"ok": True, "totp_enabled": True, "recovery_codes": codes})


@routes.post(f"{BASE}/disable")
@requires("jwt", scope=EVERYONE)
async def disable(request: web.Request) -> web.Response:
    await disable_member_totp(gateway_of(request), *_member(request), await _code(request))
    return envelope({"ok": True, "totp_enabled": False})


@routes.post(f"{BASE}/recovery-codes")
@requires("jwt", scope=EVERYONE)
async def recovery_codes(request: web.Request) -> web.Response:
    merchant_id, member_id, _ = _member(request)
    codes = await renew_recovery_codes(gateway_of(request), merchant_id, member_id, await _code(request))
    return envelope({"recovery_codes": codes})
