"""Dashboard settings and two-factor set-up (SPEC 4.8).

The spec shows no response body for the settings PUTs; they answer with the
updated account (``data.account``, as GET /dashboard/account), and the
webhook PUT adds ``webhook_url`` and, when one is created, ``webhook_secret``.
``POST /dashboard/settings/webhook/test`` (beyond SPEC, issue 32) queues a
signed test event to that URL.
"""

from __future__ import annotations

from typing import Any, Mapping

from aiohttp import web

from ...core.accounts import merchants as accounts
from ...core.accounts.auth import normalize_totp_code
from ...core.accounts.second_factor import renew_recovery_codes
from ...core.types.errors import ValidationError
from ...core.events.test_event import send_test_event
from ...core.pages.qr import qr_data_uri
from ..auth import principal_of, requires
from ..envelope import envelope, read_json
from ..keys import REQUEST_ID, gateway_of
from ..validation import Field, validate
from .dashboard_auth import validate_with_passwords

routes = web.RouteTableDef()

KEY_TYPES = {"merchantApiKey": "merchant", "payoutApiKey": "payout", "generalApiKey": "general"}


async def _account_response(request: web.Request, row: Mapping[str, Any]) -> web.Response:
    return envelope({"account": accounts.account_view(gateway_of(request), row)})


@routes.put("/dashboard/settings/webhook")
@requires("jwt", scope="webhook:manage")
async def put_webhook(request: web.Request) -> web.Response:
    clean = validate(await read_json(request), [
        Field("webhook_url", "url", required=True, max_len=500),
        Field("rotate_secret", "bool", default=False),
    ])
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    result = await accounts.set_webhook(gateway, merchant_id, clean["webhook_url"], clean["rotate_secret"])
    row = await accounts.require_merchant(gateway.db, merchant_id)
    return envelope({**result, "account": accounts.account_view(gateway, row)})


@routes.post("/dashboard/settings/webhook/test")
@requires("jwt", scope="webhook:manage")
async def post_webhook_test(request: web.Request) -> web.Response:
    """Queue a signed ``webhook.test`` event to the webhook URL (beyond SPEC; core/events/test_event.py)."""
    return envelope(await send_test_event(gateway_of(request), principal_of(request).merchant_id,
                                          request_id=request.get(REQUEST_ID)))


@routes.put("/dashboard/settings/coins")
@requires("jwt", scope="settings:manage")
async def put_coins(request: web.Request) -> web.Response:
    clean = validate(await read_json(request), [
        Field("accepted_coins", "list", required=True, min_len=1, max_len=50, upper=True),
    ])
    row = await accounts.set_accepted_coins(gateway_of(request), principal_of(request).merchant_id,
                                            clean["accepted_coins"])
    return await _account_response(request, row)


@routes.put("/dashboard/settings/confirmations")
@requires("jwt", scope="settings:manage")
async def put_confirmations(request: web.Request) -> web.Response:
    body = await read_json(request)
    # Accept the bare object (SPEC 4.8) and also {"confirmations": {...}}.
    thresholds = body["confirmations"] if isinstance(body.get("confirmations"), dict) else body
    row = await accounts.set_confirmations(gateway_of(request), principal_of(request).merchant_id,
                                           {str(k).upper(): v for k, v in thresholds.items()})
    return await _account_response(request, row)


@routes.put("/dashboard/settings/customer-static-mode")
@requires("jwt", scope="settings:manage")
async def put_customer_static_mode(request: web.Request) -> web.Response:
    clean = validate(await read_json(request), [Field("enabled", "bool", required=True)])
    row = await accounts.set_customer_static_mode(gateway_of(request), principal_of(request).merchant_id,
                                                  clean["enabled"])
    return await _account_response(request, row)


@routes.post("/dashboard/settings/change-password")
@requires("jwt", scope="account:credentials")
async def change_password(request: web.Request) -> web.Response:
    clean = validate_with_passwords(await read_json(request), [],
                                    {"current_password": False, "new_password": True})
    token = await accounts.change_password(gateway_of(request), principal_of(request).merchant_id,
                                           clean["current_password"], clean["new_password"])
    # Older tokens stop working; the caller's session continues with this one.
    return envelope({"ok": True, "token": token})


@routes.post("/dashboard/settings/rotate-key")
@requires("jwt", scope="key:manage")
async def rotate_key(request: web.Request) -> web.Response:
    clean = validate(await read_json(request), [
        Field("key_type", required=True, choices=tuple(KEY_TYPES), aliases=("keyType",)),
    ])
    principal = principal_of(request)
    new_key = await accounts.rotate_legacy_key(gateway_of(request), principal.merchant_id,
                                               KEY_TYPES[clean["key_type"]], issuer=principal.key_issuer())
    return envelope({"key_type": clean["key_type"], "new_key": new_key})


# -- two-factor -------------------------------------------------------------------------------


def _code(body: dict) -> str:
    code = normalize_totp_code(body.get("code"))
    if code is None:
        raise ValidationError({"code": "must be a 6-digit code"})
    return code


@routes.post("/dashboard/mfa/setup")
@requires("jwt", scope="account:credentials")
async def mfa_setup(request: web.Request) -> web.Response:
    secret, url = await accounts.start_totp_setup(gateway_of(request), principal_of(request).merchant_id)
    qr = await qr_data_uri(gateway_of(request).cpu, url, cache=False)  # the URL carries the TOTP secret
    return envelope({"secret": secret, "otpauth_url": url, "qr_code": qr})


@routes.post("/dashboard/mfa/verify")
@requires("jwt", scope="account:credentials")
async def mfa_verify(request: web.Request) -> web.Response:
    """Turns 2FA on; the answer carries the ten recovery codes, shown this once (issue 42)."""
    code = _code(await read_json(request))
    codes = await accounts.enable_totp(gateway_of(request), principal_of(request).merchant_id, code)
    return envelope({"ok": True, "totp_enabled": True, "recovery_codes": codes})


@routes.post("/dashboard/mfa/recovery-codes")
@requires("jwt", scope="account:credentials")
async def mfa_recovery_codes(request: web.Request) -> web.Response:
    """A new set of recovery codes against a fresh TOTP code; the old set stops working."""
    code = _code(await read_json(request))
    codes = await renew_recovery_codes(gateway_of(request), principal_of(request).merchant_id, None, code)
    return envelope({"recovery_codes": codes})


@routes.post("/dashboard/mfa/disable")
@requires("jwt", scope="account:credentials")
async def mfa_disable(request: web.Request) -> web.Response:
    code = _code(await read_json(request))
    await accounts.disable_totp(gateway_of(request), principal_of(request).merchant_id, code)
    return envelope({"ok": True, "totp_enabled": False})
