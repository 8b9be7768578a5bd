"""Dashboard API (SPEC 4.7-4.9): sign-up, account, settings, two-factor, API keys, webhook logs."""

from __future__ import annotations

from .operations import JSON, Op, Param, body
from .schemas import BOOLEAN, COIN, ISSUED_BY, STRING, TIMESTAMP, array, envelope, obj, page, ref

AUTH, ACCOUNT, SETTINGS, KEYS = "Dashboard: auth", "Dashboard: account", "Dashboard: settings", "Dashboard: API keys"
JWT = ("jwt",)

PASSWORD = {"type": "string", "minLength": 8, "maxLength": 128}
EMAIL = {"type": "string", "format": "email", "maxLength": 254}
URL = {"type": "string", "format": "uri", "maxLength": 500}
TOTP = {"type": "string", "pattern": r"^[0-9]{6}$"}
LEGACY_KEY_HEADERS = ("merchant_api_key", "payout_api_key", "general_api_key")
KEY_POWERS = ("A team member may create or rotate only a key whose every scope their role gives them: 403"
              " scope_not_held naming the others in detail.scopes (issue 42).")

SESSION = {"token": STRING, "merchant_id": STRING, "email": STRING}
SIGN_IN_CODE = {"type": "string", "maxLength": 64, "description": (
    "Whoever has their own 2FA on (the account holder or a team member): the 6-digit code from their"
    " authenticator app, or one of their recovery codes (xxxx-xxxx-xxxx-xxxx; sign-in only, never a transfer).")}
SIGN_IN_REFUSED = {
    "description": "invalid credentials (error.code unauthorized); totp_required: the password was right and the"
                   " person's 2FA is on, so send totp_code (nothing else happened); totp_invalid: a wrong, used or"
                   " malformed code (counted by the person's code lockout: 429 past five).",
    "content": {JSON: {"schema": {"allOf": [ref("Error")], "properties": {"error": {"properties": {"code": {
        "enum": ["unauthorized", "totp_required", "totp_invalid"]}}}}}}}}
RECOVERY_CODES = ref("RecoveryCodes")
ACCOUNT_DATA = obj({"account": ref("Account")})
PAGINATION = (
    Param("limit", {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}),
    Param("offset", {"type": "integer", "minimum": 0, "default": 0}),
)

OPERATIONS = [
    Op("POST", "/dashboard/auth/signup", "Create an account", AUTH,
       envelope(obj({**SESSION, "api_keys": obj({name: STRING for name in LEGACY_KEY_HEADERS},
                                                description="The three legacy keys, shown once.")})),
       body=body({"email": EMAIL, "password": PASSWORD},
                 {"turnstile_token": STRING, "ref": {"type": "string", "description": "Referrer account id."}}),
       errors=(403, 409),
       description="Returns a 24-hour JWT and the three API keys (shown once). 403 when a captcha fails."),
    Op("POST", "/dashboard/auth/login", "Sign in", AUTH, envelope(obj(SESSION)),
       body=body({"email": STRING, "password": STRING}, {"turnstile_token": STRING, "totp_code": SIGN_IN_CODE}),
       errors=(400, 401, 403), responses={"401": SIGN_IN_REFUSED},
       description="Without 2FA the answer is SPEC's. With the person's own 2FA on, no token comes from the password"
                   " alone: 401 totp_required until totp_code is sent with the password (a deliberate difference"
                   " from SPEC, which asks the code for transfers only: docs/api.md). 403 when a captcha fails. 429"
                   " while the e-mail's password lockout runs, unless this request passed the captcha, which then"
                   " stands in for it."),
    Op("GET", "/dashboard/account", "The account", ACCOUNT, envelope(ACCOUNT_DATA), auth=JWT),
    Op("PUT", "/dashboard/settings/webhook", "Set the webhook URL", SETTINGS,
       envelope(obj({"webhook_url": STRING, "account": ref("Account")},
                    {"webhook_secret": {"type": "string", "description": "Returned once, when created or rotated."}})),
       auth=JWT, body=body({"webhook_url": URL}, {"rotate_secret": BOOLEAN}), scope="webhook:manage"),
    Op("POST", "/dashboard/settings/webhook/test", "Send a test event to the webhook URL", SETTINGS,
       envelope(obj({"event_id": STRING, "event_type": {"const": "webhook.test"}, "webhook_url": STRING})),
       auth=JWT,
       description="Queues a signed webhook.test event (body: type test, merchant_id, message, created_at) to"
                   " the webhook URL through the outbox; it appears in GET /dashboard/webhook-logs with every"
                   " attempt. At most 3 a minute per account (429 test_event_rate_limited, with Retry-After);"
                   " 400 when no webhook URL is set. Not in SPEC (docs/decisions.md).", scope="webhook:manage"),
    Op("PUT", "/dashboard/settings/coins", "Set accepted coins", SETTINGS, envelope(ACCOUNT_DATA), auth=JWT,
       body=body({"accepted_coins": array(COIN, minItems=1)}), scope="settings:manage"),
    Op("PUT", "/dashboard/settings/confirmations", "Raise confirmation thresholds", SETTINGS,
       envelope(ACCOUNT_DATA), auth=JWT,
       body={"type": "object", "additionalProperties": {"type": "integer", "minimum": 1},
             "description": "Coin to confirmations (also accepted wrapped as {confirmations: {...}})."},
       scope="settings:manage"),
    Op("PUT", "/dashboard/settings/customer-static-mode", "Per-customer static addresses", SETTINGS,
       envelope(ACCOUNT_DATA), auth=JWT, body=body({"enabled": BOOLEAN}), scope="settings:manage"),
    Op("POST", "/dashboard/settings/change-password", "Change the password", SETTINGS,
       envelope(obj({"ok": {"const": True}, "token": STRING})), auth=JWT,
       body=body({"current_password": STRING, "new_password": PASSWORD}),
       description="Older tokens stop working; the response carries a fresh one.", scope="account:credentials"),
    Op("POST", "/dashboard/settings/rotate-key", "Rotate a legacy API key", SETTINGS,
       envelope(obj({"key_type": STRING, "new_key": STRING})), auth=JWT,
       body=body({"key_type": {"type": "string", "enum": ["merchantApiKey", "payoutApiKey", "generalApiKey"]}}),
       description="The old key is invalid at once; the new one is shown once, and the key is now the rotating"
                   " person's. " + KEY_POWERS + " The payout key is the account holder's alone (403 holder_only).",
       scope="key:manage"),
    Op("POST", "/dashboard/mfa/setup", "Start TOTP set-up", SETTINGS,
       envelope(obj({"secret": STRING, "otpauth_url": STRING, "qr_code": STRING})), auth=JWT,
       scope="account:credentials"),
    Op("POST", "/dashboard/mfa/verify", "Enable TOTP", SETTINGS,
       envelope(obj({"ok": {"const": True}, "totp_enabled": {"const": True}, "recovery_codes": RECOVERY_CODES})),
       auth=JWT, body=body({"code": TOTP}), scope="account:credentials",
       description="From now on every sign-in asks the code too. The recovery codes each sign in once in place of"
                   " a code (a lost phone is not a lost account); they are not accepted for transfers."),
    Op("POST", "/dashboard/mfa/recovery-codes", "New recovery codes", SETTINGS,
       envelope(obj({"recovery_codes": RECOVERY_CODES})), auth=JWT, body=body({"code": TOTP}),
       scope="account:credentials",
       description="Against a fresh authenticator code (never a recovery code): a new set of ten, the old set stops"
                   " working. 403 totp_setup_required while 2FA is off; 401 totp_invalid."),
    Op("POST", "/dashboard/mfa/disable", "Disable TOTP", SETTINGS,
       envelope(obj({"ok": {"const": True}, "totp_enabled": {"const": False}})), auth=JWT,
       body=body({"code": TOTP}), scope="account:credentials"),
    Op("GET", "/dashboard/api-keys", "List API keys", KEYS,
       envelope(obj({**{name: {"anyOf": [STRING, {"type": "null"}], "description": "Masked legacy key."}
                        for name in LEGACY_KEY_HEADERS}, "keys": array(ref("ApiKeyRow"))})), auth=JWT),
    Op("POST", "/dashboard/api-keys", "Create a scoped API key", KEYS,
       envelope(obj({"api_key": STRING, "id": STRING, "label": STRING, "prefix": STRING,
                     "scopes": array(ref("Scope")), "created_at": TIMESTAMP},
                    {"webhook_secret": {"type": "string", "description": "With webhook_url; returned once."},
                     "issued_by": ISSUED_BY})),
       auth=JWT,
       body=body({"label": {"type": "string", "minLength": 1, "maxLength": 80},
                  "scopes": array(ref("Scope"), minItems=1)},
                 {"coin_allowlist": array(COIN), "ip_allowlist": array(STRING, description="CIDRs"),
                  "webhook_url": URL, "rate_limit_rpm": {"type": "integer", "minimum": 1, "maximum": 10000},
                  "expires_at": TIMESTAMP, "brand_id": STRING}),
       description="The plaintext api_key is returned once; issued_by names the creator. " + KEY_POWERS,
       scope="key:manage"),
    Op("POST", "/dashboard/api-keys/{key_id}/revoke", "Revoke a scoped key", KEYS,
       envelope(obj({"ok": {"const": True}, "already_revoked": BOOLEAN, "id": STRING, "revoked_at": TIMESTAMP})),
       auth=JWT, errors=(400,), scope="key:manage"),
    Op("POST", "/dashboard/api-keys/{key_id}/rotate", "Rotate a scoped key", KEYS,
       envelope(obj({"id": STRING, "api_key": STRING, "prefix": STRING, "previous_valid_until": TIMESTAMP},
                    {"issued_by": ISSUED_BY})),
       auth=JWT, errors=(400,), description="The previous secret stays valid for a 30-minute grace window (and"
                                            " acts for whoever held it); the key is now the rotating person's. "
                                            + KEY_POWERS, scope="key:manage"),
    Op("GET", "/dashboard/webhook-logs", "Webhook delivery log", ACCOUNT,
       envelope(page("logs", ref("WebhookLog"))), auth=JWT, query=PAGINATION),
]
