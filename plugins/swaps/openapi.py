"""The swaps plugin documents its routes in ``/openapi.json`` (``register_openapi``)."""

from __future__ import annotations

from ...api.openapi import Op, Param, envelope, obj, ref

TAG = "Dashboard: swaps"
JWT = ("jwt",)
STRING, BOOLEAN, INTEGER = {"type": "string"}, {"type": "boolean"}, {"type": "integer"}
NULLABLE_STRING = {"anyOf": [STRING, {"type": "null"}]}
AMOUNT = {"type": "string", "description": "Coin units (decimal string)."}
STATUS = {"type": "string", "enum": ["QUOTED", "PENDING", "CONFIRMED", "FAILED"]}
BODY = obj({"from_coin": STRING, "to_coin": STRING, "amount": AMOUNT},
           {"totp_code": STRING, "idempotency_key": {"type": "string", "minLength": 8, "maxLength": 128}})

QUOTE = obj({"venue": STRING, "from_coin": STRING, "to_coin": STRING, "from_amount": AMOUNT, "to_amount": AMOUNT,
             "rate": STRING, "min_from_amount": AMOUNT, "valid_until": {"type": "string", "format": "date-time"},
             "floating_rate": BOOLEAN})
SWAP = obj({
    "swap_id": STRING, "kind": {"type": "string", "enum": ["balance", "settle"]}, "venue": STRING,
    "from_coin": STRING, "from_amount": AMOUNT, "to_coin": STRING, "to_amount_quoted": AMOUNT, "rate": STRING,
    "floating_rate": BOOLEAN, "status": STATUS, "actual_to_amount": {"anyOf": [AMOUNT, {"type": "null"}]},
    "payin_hash": NULLABLE_STRING, "payout_hash": NULLABLE_STRING, "refund_hash": NULLABLE_STRING,
    "failure_reason": NULLABLE_STRING, "track_id": NULLABLE_STRING, "created_at": INTEGER, "updated_at": INTEGER,
}, {"idempotent": BOOLEAN})
SETTLEMENT = envelope(obj({"default_settlement_coin": NULLABLE_STRING}))
PAGE = (Param("limit", {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}),
        Param("offset", {"type": "integer", "minimum": 0, "default": 0}))

OPERATIONS = [
    Op("POST", "/dashboard/swap/quote", "Quote a balance swap", TAG, envelope(ref("SwapQuote")), auth=JWT,
       body=BODY, errors=(503,),
       description="Asks the venue; changes nothing (counted as a read). No markup is added. With floating_rate "
                   "true the delivered amount may drift about 2 percent. 503 venue_unavailable.", scope="swap:create"),
    Op("POST", "/dashboard/swap", "Swap part of a balance into another coin", TAG, envelope(ref("Swap")),
       auth=JWT, body=BODY, errors=(401, 409, 503),
       description="Debits from_coin at once (400 insufficient_balance) and schedules the swap (status QUOTED). "
                   "On venue failure or timeout the source is credited back in full (FAILED). totp_code is "
                   "required when the account has 2FA on. idempotency_key replays the first swap.",
       scope="swap:create"),
    Op("GET", "/dashboard/swap/{swap_id}", "One swap", TAG, envelope(ref("Swap")), auth=JWT, errors=(404,),
       description="Another merchant's swap is 404. Use actual_to_amount, not the quote, for reconciliation."),
    Op("GET", "/dashboard/swaps", "List swaps (newest first)", TAG,
       envelope(obj({"swaps": {"type": "array", "items": ref("Swap")}, "total": INTEGER, "limit": INTEGER,
                     "offset": INTEGER})), auth=JWT, query=PAGE),
    Op("GET", "/dashboard/settings/settlement-coin", "The account's default settlement coin",
       "Dashboard: settings", SETTLEMENT, auth=JWT),
    Op("PUT", "/dashboard/settings/settlement-coin", "Set the account's default settlement coin",
       "Dashboard: settings", SETTLEMENT, auth=JWT, body=obj({"default_settlement_coin": NULLABLE_STRING}),
       description="Credited payment deposits in another coin are converted into it (auto-settle); null clears it.",
       scope="settings:manage"),
]


def register(registry) -> None:
    registry.add_schema("SwapQuote", QUOTE)
    registry.add_schema("Swap", SWAP)
    for op in OPERATIONS:
        registry.add(op)
