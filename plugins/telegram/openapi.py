"""The telegram plugin documents its routes in ``/openapi.json`` (``register_openapi``).

The mini-app routes take the mini-app JWT, a credential this plugin checks
itself, so it registers the ``miniAppBearer`` security scheme and names it
on each of them.
"""

from __future__ import annotations

from typing import Any

from ...api.openapi import Op, Param, envelope, html, obj, redirect, ref

LINKING, MINIAPP = "Messaging: linking", "Messaging: mini-app"
JWT = ("jwt",)
SCHEME = "miniAppBearer"
SESSION: dict[str, Any] = {"security": [{SCHEME: []}]}
STRING, BOOLEAN, INTEGER = {"type": "string"}, {"type": "boolean"}, {"type": "integer"}
NULLABLE_STRING = {"anyOf": [STRING, {"type": "null"}]}
AMOUNT, COIN = ref("Amount"), ref("Coin")
TOTP = {"type": "string", "pattern": r"^[0-9]{6}$"}
NEEDS_TOTP = ("totp_code is required: 403 totp_setup_required when the account has no 2FA, 401 totp_invalid for a "
              "wrong, reused or missing code.")
COOLING_OFF = ("403 mfa_cooling_off (error.detail.available_at: when it becomes possible) until the chat has "
               "been linked for plugin.telegram.mfa_cooling_off_seconds (default 24 hours).")
SWAP_BODY = obj({"from_coin": STRING, "to_coin": STRING, "amount": AMOUNT},
                {"idempotency_key": {"type": "string", "minLength": 8, "maxLength": 128}})

TIMESTAMP = {"type": "integer"}
# A row of GET /v1/payment (PaymentSummary) and the stream the mini-app follows for it.
RECENT_PAYMENT = obj({"track_id": STRING, "type": STRING, "status": STRING, "currency": STRING,
                      "address": NULLABLE_STRING, "paid_at": {"anyOf": [TIMESTAMP, {"type": "null"}]},
                      "created_at": TIMESTAMP, "events_url": NULLABLE_STRING})

MINIAPP_SCHEME = {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                  "description": "Mini-app JWT from POST /tgapp/session, valid 1 hour (claims m, tg, src=tgapp). "
                                 "Accepted only on /tgapp routes; the dashboard JWT is never accepted there."}


def _app(method: str, path: str, summary: str, response, **kwargs) -> Op:
    errors = tuple(sorted({401, 403, *kwargs.pop("errors", ())}))
    return Op(method, path, summary, MINIAPP, response, errors=errors, extensions=SESSION, **kwargs)


OPERATIONS = [
    Op("GET", "/tg/link/start", "Open a chat-link token from the bot", LINKING, page=True, errors=(404,),
       query=(Param("t", {"type": "string", "maxLength": 128}, "The link token <chat_id>.<expiry>.<hmac>.",
                    required=True),),
       responses={"302": redirect("To /app#tg-link=<token>: the dashboard shows a confirmation page naming the "
                                  "chat; nothing is linked until the account holder confirms with the password "
                                  "(or a TOTP code)."),
                  "400": html("Invalid, expired (10 minutes) or already used token.")},
       description="The bot sends this link in answer to /start in a private chat. 404 when no bot is "
                   "configured."),
    Op("POST", "/dashboard/tg/link/complete", "Bind the chat of a link token to this account", LINKING,
       envelope(obj({"ok": {"const": True}, "account_id": ref("AccountId")})), auth=JWT,
       body=obj({"token": STRING}, {"password": STRING, "totp_code": TOTP}), errors=(401, 429, 503),
       description="The account holder confirms: password is required, or totp_code instead when 2FA is on "
                   "(400 validation naming the missing field; 401 wrong password or totp_invalid, counted by the "
                   "account's sign-in and TOTP lockouts, 429 while locked; 403 password_not_set for a "
                   "password-less account without 2FA). Then spends the token (400 link_token_invalid, "
                   "link_token_expired, link_token_used, link_chat_unknown when the bot never recorded who the "
                   "chat is), binds the chat (replacing this account's previous chat and the chat's previous "
                   "account) and sends a confirmation message. A refusal binds nothing and leaves the token "
                   "unspent. 503 telegram_not_configured without a bot token.", scope="account:credentials"),
    Op("GET", "/dashboard/tg/link/status", "Whether a chat is linked, and whose", LINKING,
       envelope(obj({"linked": BOOLEAN, "linked_at": {"anyOf": [INTEGER, {"type": "null"}]},
                     "chat_id": {"anyOf": [INTEGER, {"type": "null"}]}, "first_name": NULLABLE_STRING,
                     "last_name": NULLABLE_STRING, "username": NULLABLE_STRING})), auth=JWT,
       description="first_name, last_name and username (without @) are the Telegram user's as the bot saw them "
                   "at /start; null when unknown."),
    Op("POST", "/dashboard/tg/unlink", "Unlink the chat from the dashboard", LINKING,
       envelope(obj({"ok": {"const": True}, "unlinked": BOOLEAN})), auth=JWT,
       description="Removes the binding (unlinked false when none); the chat's mini-app sessions end at once "
                   "and stay ended if the chat is linked again.", scope="account:credentials"),
    Op("POST", "/tg/webhook", "Telegram updates (webhook mode)", LINKING, envelope(obj({"ok": {"const": True}})),
       body=obj({"update_id": INTEGER}), rate_limited=False, errors=(401, 404),
       description="Telegram's servers post updates here when plugin.telegram.mode is webhook; the header "
                   "X-Telegram-Bot-Api-Secret-Token must equal plugin.telegram.webhook_secret (401). 404 in "
                   "polling mode."),
    Op("GET", "/tgapp", "The mini-app page", MINIAPP, page=True,
       responses={"200": html("The mini-app (opened in Telegram's web view; needs its init data).")}),
    Op("POST", "/tgapp/session", "Open a mini-app session from Telegram init data", MINIAPP,
       envelope(obj({"token": STRING, "expires_in": {"const": 3600}, "merchant": obj({
           "id": STRING, "account_id": ref("AccountId"), "email": STRING,
           "default_settlement_coin": NULLABLE_STRING, "accepted_coins": {"type": "array", "items": COIN}})})),
       body=obj({"init_data": {"type": "string", "maxLength": 4096}}, {"totp_code": {
           "type": "string", "maxLength": 64,
           "description": "With the account's 2FA on: the holder's 6-digit code or one of their recovery codes."}}),
       errors=(401, 403, 429, 503),
       description="init_data is Telegram.WebApp.initData, verified with HMAC-SHA256 and the WebAppData-derived "
                   "key. 401 init_data_invalid (forged), init_data_expired (auth_date older than "
                   "plugin.telegram.init_data_max_age_seconds, default 1 hour), init_data_replayed (one session "
                   "per init data); 403 not_linked, merchant_disabled. With the account's 2FA on, 401 "
                   "totp_required until totp_code comes with the same init data (spent only when the session "
                   "opens) and 401 totp_invalid for a wrong one, counted by the mini-app's own code lockout "
                   "(429): a deliberate difference from SPEC, as for every sign-in (docs/api.md)."),
    _app("GET", "/tgapp/balances", "Balances", envelope(ref("Balances"))),
    _app("GET", "/tgapp/payments", "The 10 most recent payments", envelope(obj({
        "payments": {"type": "array", "maxItems": 10, "items": RECENT_PAYMENT}})),
         description="A row of GET /v1/payment plus events_url: the hosted page's event stream "
                     "(GET /pay/{track_id}/events) of each of the 4 newest open invoices, which the mini-app "
                     "follows live; null for the others."),
    _app("GET", "/tgapp/receive", "The standing address of a coin",
         envelope(obj({"coin": COIN, "address": STRING, "network_label": STRING})),
         query=(Param("coin", COIN, "One of the accepted coins.", required=True),),
         description="400 missing_coin, coin_not_accepted, xmr_receive_unsupported."),
    _app("GET", "/tgapp/prices", "USD prices", envelope({
        "type": "object", "additionalProperties": obj({"usd": AMOUNT, "change_24h": NULLABLE_STRING})}),
         description="usd is \"0\" when unknown; change_24h is null (no configured source reports it)."),
    Op("GET", "/tgapp/qr", "A QR code", MINIAPP, query=(Param("data", {"type": "string", "maxLength": 512},
                                                              "1-512 characters.", required=True),),
       responses={"200": {"description": "SVG, Cache-Control public, max-age=300.",
                          "content": {"image/svg+xml": {"schema": {"type": "string"}}}}},
       errors=(404, 503),
       description="400 for missing data or over 512 characters; 404 when no bot is configured; 503 busy when the"
                   " CPU pool is full. 30 requests per minute per IP (rate_limits.cpu_per_minute)."),
    _app("GET", "/tgapp/mfa/status", "Two-factor status", envelope(obj({"totpEnabled": BOOLEAN}))),
    _app("POST", "/tgapp/mfa/setup", "Start TOTP set-up", envelope(obj({"secret": STRING, "otpauth": STRING})),
         description="2FA stays off until /tgapp/mfa/verify; 400 when it is already on. " + COOLING_OFF),
    _app("POST", "/tgapp/mfa/verify", "Enable TOTP",
         envelope(obj({"ok": {"const": True}, "totpEnabled": {"const": True},
                       "recovery_codes": ref("RecoveryCodes")})), body=obj({"code": TOTP}),
         description=COOLING_OFF + " Turning 2FA on here is announced on the dashboard (an alert on its home page "
                                   "and a security event). The answer carries the recovery codes, shown once."),
    _app("POST", "/tgapp/payout", "Send: internal transfer or on-chain payout", envelope(obj({
        "kind": {"type": "string", "enum": ["transfer", "payout"]}, "track_id": STRING,
        "status": {"type": "string", "enum": ["CONFIRMING", "CONFIRMED", "FAILED"]}, "coin": COIN,
        "amount": AMOUNT, "destination": STRING})),
        body=obj({"currency": STRING, "destination": {"type": "string", "maxLength": 128}, "amount": AMOUNT,
                  "totp_code": TOTP}, {"idempotency_key": {"type": "string", "minLength": 8, "maxLength": 128}}),
        errors=(409, 503),
        description="A destination shaped like an account id is an internal transfer, anything else an "
                    "on-chain payout. " + NEEDS_TOTP + " 400 insufficient_balance, invalid_address, "
                    "burn_address, recipient_not_found, self_transfer, coin_not_supported."),
    _app("POST", "/tgapp/swap/quote", "Quote a balance swap", envelope(ref("SwapQuote")), body=SWAP_BODY,
         errors=(503,), description="As POST /dashboard/swap/quote; changes nothing."),
    _app("POST", "/tgapp/swap", "Swap part of a balance", envelope(obj({
        "swap_id": STRING, "from_coin": COIN, "from_amount": AMOUNT, "to_coin": COIN, "to_amount_quoted": AMOUNT,
        "status": {"type": "string", "enum": ["QUOTED", "PENDING", "CONFIRMED", "FAILED"]}},
        {"idempotent": {"const": True}})),
        body=obj({"from_coin": STRING, "to_coin": STRING, "amount": AMOUNT, "totp_code": TOTP},
                 {"idempotency_key": {"type": "string", "minLength": 8, "maxLength": 128}}),
        errors=(409, 503), description="Through the swaps plugin. " + NEEDS_TOTP),
    _app("POST", "/tgapp/unlink", "Unlink the chat", envelope(obj({"ok": {"const": True}})),
         description="Ends every mini-app session of the link at once (they stay ended if the chat is linked "
                     "again)."),
]


def register(registry) -> None:
    registry.add_security_scheme(SCHEME, MINIAPP_SCHEME)
    for op in OPERATIONS:
        registry.add(op)
