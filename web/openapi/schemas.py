"""Reusable schema pieces and the records of SPEC section 2 (``components/schemas``).

Small Python helpers build JSON Schema (2020-12, the dialect of OpenAPI 3.1):
``obj`` for an object with its required fields, ``nullable`` for "X or null",
``ref`` for a component. Amounts are always ``Amount`` (a decimal string),
never a JSON number. Records list every field the gateway returns; they
leave ``additionalProperties`` open so clients tolerate fields added later
(the test suite validates real responses with unknown fields forbidden, so
the document still names everything the gateway sends today).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ...core.accounts import auth

Schema = dict[str, Any]

ENVELOPE_VERSION = "2.0.0"
PAYMENT_TYPES = ["static_address", "white_label", "invoice"]
PAYMENT_STATUSES = ["Waiting", "Paying", "Paid", "Expired", "Cancelled"]
DEPOSIT_STATUSES = ["PENDING", "CONFIRMED", "CREDITED", "FAILED"]
PAYOUT_STATUSES = ["Confirming", "Confirmed", "Failed"]
ERROR_TYPES = [
    "validation", "invalid_request", "authentication", "forbidden", "not_found", "conflict", "gone",
    "rate_limit", "unavailable", "maintenance", "not_configured", "internal",
]
# What a scoped key may be given, and every scope a key row can show (legacy keys add refund:create).
SCOPES = list(auth.SCOPES)
ALL_SCOPES = sorted({*auth.SCOPES, *(s for scopes in auth.LEGACY_SCOPES.values() for s in scopes)})


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: Schema) -> Schema:
    """``schema`` or null (JSON Schema 2020-12 style, as OpenAPI 3.1 wants)."""
    return {"anyOf": [schema, {"type": "null"}]}


def obj(required: dict[str, Schema], optional: dict[str, Schema] | None = None, **extra: Any) -> Schema:
    """An object whose ``required`` fields are always present and ``optional`` ones sometimes."""
    schema: Schema = {"type": "object", "required": list(required), "properties": {**required, **(optional or {})}}
    schema.update(extra)
    return schema


def array(items: Schema, **extra: Any) -> Schema:
    return {"type": "array", "items": items, **extra}


def enum(values: list[str], description: str | None = None) -> Schema:
    schema: Schema = {"type": "string", "enum": list(values)}
    if description:
        schema["description"] = description
    return schema


STRING: Schema = {"type": "string"}
BOOLEAN: Schema = {"type": "boolean"}
INTEGER: Schema = {"type": "integer"}
AMOUNT = ref("Amount")
COIN = ref("Coin")
TIMESTAMP = ref("Timestamp")


def page(name: str, items: Schema) -> Schema:
    """A paginated list: ``{<name>: [...], total, limit, offset}``."""
    return obj({name: array(items), "total": {"type": "integer", "minimum": 0},
                "limit": {"type": "integer", "minimum": 1}, "offset": {"type": "integer", "minimum": 0}})


# -- primitives -----------------------------------------------------------------------------------

PRIMITIVES: dict[str, Schema] = {
    "Amount": {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)?$",
               "description": "A decimal amount in coin (or fiat) units, as a string; never a JSON number.",
               "examples": ["0.5", "60"]},
    "Coin": {"type": "string", "pattern": r"^[A-Z0-9_]{2,20}$",
             "description": "A coin symbol registered by a chain plugin (SPEC 2.7);"
                            " GET /v1/common/currencies lists them."},
    "Timestamp": {"type": "integer", "minimum": 0, "description": "Unix seconds."},
    "Scope": enum(SCOPES, "A scope a scoped key can be given (SPEC 5.2)."),
    "ShownScope": enum(ALL_SCOPES, "A scope as key rows show it; legacy payout keys also hold refund:create."),
    "RecoveryCodes": {"type": "array", "minItems": 10, "maxItems": 10,
                      "items": {"type": "string", "pattern": "^[a-z2-7]{4}(-[a-z2-7]{4}){3}$"},
                      "description": "Ten single-use recovery codes, shown this once (stored hashed): each signs"
                                     " its person in once in place of a 2FA code; never accepted for a transfer."},
}

# -- envelope and errors (SPEC 2.1, 7) ------------------------------------------------------------

ENVELOPE: dict[str, Schema] = {
    "Version": {"type": "string", "const": ENVELOPE_VERSION, "description": "Envelope version."},
    "Envelope": obj(
        {"data": {"description": "The payload: an object, an array or null."},
         "message": {"type": "string", "const": "OK"}, "error": {"type": "null"},
         "status": {"type": "integer", "description": "Mirrors the HTTP status."}, "version": ref("Version")},
        description="The V2 success envelope (SPEC 2.1). Each operation's 200 repeats it with its own data schema.",
    ),
    "ErrorObject": obj(
        {"type": enum(ERROR_TYPES), "message": STRING},
        {"code": {"type": "string", "description": "A named code (SPEC 7), e.g. insufficient_balance."},
         "detail": {"type": "object", "additionalProperties": STRING,
                    "description": "Validation errors: field name to problem."}},
    ),
    "Error": obj(
        {"data": {"type": "null"}, "message": STRING, "error": ref("ErrorObject"),
         "status": {"type": "integer", "minimum": 400, "maximum": 599}, "version": ref("Version")},
        description="The V2 envelope of a failure (SPEC 7): data null, error {type, message}.",
    ),
    "BadRequestError": {
        "description": "A 400: a validation error always names each bad field in error.detail.",
        "allOf": [ref("Error")],
        "if": {"properties": {"error": {"properties": {"type": {"const": "validation"}}}}},
        "then": {"properties": {"error": {"required": ["detail"]}}},
    },
}

# -- records (SPEC 2) -----------------------------------------------------------------------------

TRANSACTION = obj(
    {"tx_hash": STRING, "coin": COIN, "amount": AMOUNT, "amount_usd": AMOUNT,
     "status": enum(DEPOSIT_STATUSES), "confirmations": {"type": "integer", "minimum": 0}},
    description="An on-chain deposit inside a payment (SPEC 2.3).",
)

LIGHTNING = obj({"bolt11": STRING, "payment_hash": STRING},
                {"amount_sat": AMOUNT, "expires_at": TIMESTAMP, "preimage": STRING, "settled_at": TIMESTAMP,
                 "settle_amount_sat": AMOUNT},
                description="Lightning block (SPEC 2.9).")

PAYMENT = obj(
    {
        "track_id": STRING,
        "type": enum(PAYMENT_TYPES),
        "status": enum(PAYMENT_STATUSES),
        "amount": nullable(AMOUNT),
        "currency": STRING,
        "pay_currency": COIN,
        "pay_amount": nullable(AMOUNT),
        "address": nullable(STRING),
        "order_id": nullable(STRING),
        "callback_url": nullable(STRING),
        "description": nullable(STRING),
        "user_id": nullable(STRING),
        "expires_at": nullable(TIMESTAMP),
        "created_at": TIMESTAMP,
        "paid_at": nullable(TIMESTAMP),
        "transactions": array(ref("Transaction")),
    },
    {
        "network": {"type": "string", "description": "Chain of pay_currency (extra)."},
        "payment_url": {"type": "string", "description": "Invoices only: the hosted page."},
        "return_url": nullable(STRING),
        "cancel_url": nullable(STRING),
        "email": nullable(STRING),
        "accepted_coins": array(COIN, description="Invoices only: coins the payer may pick."),
        "amount_fiat": nullable(AMOUNT),
        "fiat_currency": nullable(STRING),
        "rate_locked": nullable(AMOUNT),
        "rate_locked_at": nullable(TIMESTAMP),
        "lightning": ref("Lightning"),
        "brand_id": {"type": "string", "description": "Payments made with a scoped key that has a brand_id "
                                                      "(SPEC 4.9): that brand. Absent when untagged."},
    },
    description="A payment (SPEC 2.2). Its own fields are always present, null when unset (paid_at until Paid);"
                " invoice-only, fiat-only and Lightning fields appear for those payments only.",
)

PAYMENT_SUMMARY = obj(
    {"track_id": STRING, "type": enum(PAYMENT_TYPES), "status": enum(PAYMENT_STATUSES), "currency": STRING,
     "address": nullable(STRING), "paid_at": nullable(TIMESTAMP), "created_at": TIMESTAMP},
    description="A row of GET /v1/payment (SPEC 4.2).",
)

DEPOSIT = obj(
    {"tx_hash": STRING, "coin": COIN, "network": STRING, "amount": AMOUNT, "amount_usd": AMOUNT,
     "confirmations": {"type": "integer", "minimum": 0},
     "status": enum(["Pending", "Confirmed", "Credited", "Failed"], "Mixed case in list output (SPEC 2.4)."),
     "credited": BOOLEAN, "address": STRING, "user_id": nullable(STRING), "track_id": nullable(STRING),
     "order_id": nullable(STRING), "created_at": TIMESTAMP},
    description="A deposit (SPEC 2.4).",
)

PAYOUT = obj(
    {"track_id": STRING, "status": enum(PAYOUT_STATUSES), "coin": COIN, "amount": AMOUNT, "destination": STRING,
     "created_at": TIMESTAMP, "tx_hash": nullable(STRING), "failure_reason": nullable(STRING),
     "updated_at": TIMESTAMP},
    {"idempotent": {"type": "boolean", "const": True, "description": "Present (true) on an idempotent replay."},
     "lightning": ref("Lightning"), "refund_of_payment_id": STRING,
     "awaiting_approval": {"type": "boolean", "const": True,
                           "description": "Present (true) while an approval policy holds it (an extension: "
                                          "docs/teams.md, Approvals); absent without a policy."}},
    description="A payout (SPEC 2.5): tx_hash and failure_reason are null until they apply.",
)

REFUND = obj(
    {**{name: PAYOUT["properties"][name] for name in PAYOUT["required"]},
     "refund_of_payment_id": STRING, "refunded_total": AMOUNT, "refundable_remaining": AMOUNT},
    {"idempotent": PAYOUT["properties"]["idempotent"],
     "awaiting_approval": PAYOUT["properties"]["awaiting_approval"]},
    description="A refund: the payout it created (SPEC 2.5, refund_of_payment_id set) and the payment's "
                "refund totals after it.",
)

BATCH_RESULT = obj(
    {"summary": obj({name: {"type": "integer", "minimum": 0} for name in ("total", "created", "idempotent", "failed")}),
     "results": array(obj({"index": {"type": "integer", "minimum": 0}, "external_id": nullable(STRING),
                           "track_id": nullable(STRING), "status": enum(["created", "idempotent", "failed"]),
                           "error": nullable(STRING)}))},
    description="Batch payout result (SPEC 2.11).",
)

ACCOUNT_ID: Schema = {"type": "string", "pattern": r"^[A-Z]+-[1-9A-HJ-NP-Za-km-z]{20}$",
                      "description": "Public account id: brand prefix, hyphen, 20 base58 characters."}

TRANSFER = obj(
    {"transfer_id": STRING, "to_account_id": ACCOUNT_ID, "coin": COIN, "amount": AMOUNT, "created_at": TIMESTAMP},
    {"idempotent": {"type": "boolean", "const": True, "description": "Present (true) on an idempotent replay."}},
    description="An internal transfer (SPEC 2.12).",
)

TRANSFER_ROW = obj(
    {"transfer_id": STRING, "direction": enum(["sent", "received"]), "from_account_id": ACCOUNT_ID,
     "to_account_id": ACCOUNT_ID, "coin": COIN, "amount": AMOUNT, "created_at": TIMESTAMP},
    description="A row of GET /dashboard/transfers, seen from the caller's side.",
)

CURRENCY = obj(
    {"symbol": COIN, "name": STRING, "network": STRING, "decimals": {"type": "integer", "minimum": 0},
     "confirmations": {"type": "integer", "minimum": 0}, "min_payout": AMOUNT, "note": nullable(STRING)},
    description="A coin table entry (SPEC 2.6). Where SPEC 2.7 lists no confirmation count or minimum payout"
                " (a swap-only source coin, Lightning), confirmations is what the gateway waits for (0: credited"
                " when the Lightning invoice is paid) and min_payout the only floor (one base unit, or 0 for a"
                " coin never paid out); note says so in words. note is null for every other coin.",
)

ACCOUNT = obj(
    {"id": STRING, "account_id": ACCOUNT_ID, "email": STRING, "webhook_url": nullable(STRING),
     "fee_percent": AMOUNT, "accepted_coins": array(COIN),
     "confirmations": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
     "totp_enabled": BOOLEAN, "enabled": BOOLEAN, "created_at": TIMESTAMP},
    {"default_settlement_coin": nullable(COIN), "customer_static_mode": BOOLEAN},
    description="The merchant account (SPEC 2.15).",
)

ISSUED_BY = {"type": "string", "pattern": "^(holder|member:.+)$",
             "description": "The person the key acts for, who created or last rotated it: holder (the account"
                            " holder) or member:<id> (a team member). A payout made with the key is theirs for"
                            " every approval rule."}

API_KEY_ROW = obj(
    {"id": STRING, "label": nullable(STRING), "prefix": STRING, "scopes": array(ref("ShownScope")),
     "coin_allowlist": array(COIN), "ip_allowlist": array(STRING), "webhook_url": nullable(STRING),
     "rate_limit_rpm": nullable({"type": "integer", "minimum": 1, "maximum": 10000}),
     "last_used_at": nullable(TIMESTAMP), "revoked_at": nullable(TIMESTAMP), "expires_at": nullable(TIMESTAMP),
     "created_at": TIMESTAMP, "is_legacy": BOOLEAN},
    {"brand_id": nullable(STRING), "issued_by": ISSUED_BY},
    description="A row of GET /dashboard/api-keys (SPEC 2.14); never the secret.",
)

WEBHOOK_LOG = obj(
    {"id": STRING, "url": STRING, "status_code": nullable(INTEGER), "success": BOOLEAN,
     "attempt": {"type": "integer", "minimum": 1}, "error": nullable(STRING),
     "payload_preview": nullable(STRING), "response_preview": nullable(STRING)},
    {"event_id": STRING, "event_type": STRING, "created_at": TIMESTAMP},
    description="One webhook delivery attempt (SPEC 2.16).",
)

BALANCES = obj({"balances": array(obj({"coin": COIN, "amount": AMOUNT}))},
               description="Non-zero available balances (SPEC 4.6).")

RECEIPT = obj(
    {"v": {"type": "integer", "const": 1}, "type": {"type": "string", "const": "payment_receipt"},
     "track_id": STRING, "merchant_id": STRING, "status": enum(PAYMENT_STATUSES), "pay_currency": COIN,
     "pay_amount": nullable(AMOUNT), "amount_fiat": nullable(AMOUNT), "fiat_currency": nullable(STRING),
     "paid_at": nullable(TIMESTAMP),
     "deposits": array(obj({"tx_hash": STRING, "coin": COIN, "amount": AMOUNT,
                            "confirmations": {"type": "integer", "minimum": 0}, "at": nullable(TIMESTAMP)})),
     "issued_at": TIMESTAMP},
    description="The signed receipt body (SPEC 4.2).",
)

RECEIPT_KEY = obj(
    {"public_key": {"type": "string", "contentEncoding": "base64"}, "public_key_pem": STRING,
     "algorithm": {"type": "string", "const": "Ed25519"}, "ephemeral": BOOLEAN},
    description="The receipt signing key (SPEC 4.1); ephemeral true means development only.",
)

RECORDS: dict[str, Schema] = {
    "Transaction": TRANSACTION,
    "Lightning": LIGHTNING,
    "Payment": PAYMENT,
    "PaymentSummary": PAYMENT_SUMMARY,
    "Deposit": DEPOSIT,
    "Payout": PAYOUT,
    "Refund": REFUND,
    "BatchResult": BATCH_RESULT,
    "AccountId": ACCOUNT_ID,
    "Transfer": TRANSFER,
    "TransferRow": TRANSFER_ROW,
    "Currency": CURRENCY,
    "Account": ACCOUNT,
    "ApiKeyRow": API_KEY_ROW,
    "WebhookLog": WEBHOOK_LOG,
    "Balances": BALANCES,
    "Receipt": RECEIPT,
    "ReceiptPublicKey": RECEIPT_KEY,
}


def component_schemas(scopes: Iterable[str] = (), extra: Mapping[str, Schema] | None = None) -> dict[str, Schema]:
    """The core's schemas; ``scopes`` widen the scope enums, ``extra`` are plugins' schemas."""
    schemas = {**PRIMITIVES, **ENVELOPE, **RECORDS}
    plugin_scopes = [s for s in scopes if s not in ALL_SCOPES]
    if plugin_scopes:
        schemas["Scope"] = {**schemas["Scope"], "enum": [*SCOPES, *plugin_scopes]}
        schemas["ShownScope"] = {**schemas["ShownScope"], "enum": sorted({*ALL_SCOPES, *plugin_scopes})}
    for name, schema in (extra or {}).items():
        if name in schemas:
            raise ValueError(f"a plugin's API schema {name!r} clashes with a core schema")
        schemas[name] = schema
    return schemas


def envelope(data: Schema, status: int = 200) -> Schema:
    """The V2 success envelope around ``data`` (SPEC 2.1)."""
    return obj({"data": data, "message": {"type": "string", "const": "OK"}, "error": {"type": "null"},
                "status": {"type": "integer", "const": status}, "version": ref("Version")})


def data_only(data: Schema) -> Schema:
    """A body that carries only ``data`` (transfers, batch payouts; SPEC 2.1)."""
    return obj({"data": data})
