"""Payouts, batch payouts, refunds (SPEC 4.3), internal transfers (4.4, 4.12) and dashboard twins."""

from __future__ import annotations

from .operations import Op, Param, body
from .schemas import AMOUNT, COIN, STRING, array, data_only, envelope, nullable, obj, page, ref

PAYOUTS, TRANSFERS = "Payouts", "Transfers"
PAYOUT_KEY, MERCHANT_KEY, JWT = ("payout_key",), ("merchant_key",), ("jwt",)

IDEMPOTENCY_KEY = {"type": "string", "minLength": 8, "maxLength": 128,
                   "description": "Also accepted as header X-Idempotency-Key; a replay returns the original."}
# SPEC 8's 128 characters per coin; a coin may declare longer destinations (Coin.max_destination_length; a
# payment invoice of up to 4096), so the document's bound is that longest and each coin enforces its own.
MAX_DESTINATION_LENGTH = 4096
ADDRESS = {"type": "string", "maxLength": MAX_DESTINATION_LENGTH,
           "description": "At most 128 characters, validated per coin; a coin paid to invoices may accept longer "
                          "ones (up to 4096) or a payee address such as user@domain."}
PAYOUT_FIELDS = {"currency": COIN, "address": ADDRESS, "amount": AMOUNT}
PAYOUT_OPTIONAL = {"callback_url": {"type": "string", "format": "uri", "maxLength": 500},
                   "description": {"type": "string", "maxLength": 500}, "idempotency_key": IDEMPOTENCY_KEY}
TRANSFER_BODY = body(
    {"to_account_id": ref("AccountId"), "coin": COIN, "amount": AMOUNT},
    {"idempotency_key": IDEMPOTENCY_KEY,
     "totp_code": {"type": "string", "pattern": r"^[0-9]{6}$", "description": "Required when 2FA is on."}},
)
PAYOUT_ROW = obj({"id": STRING, "trackId": STRING, "coin": COIN, "destination": STRING, "amount": AMOUNT,
                  "status": {"type": "string", "enum": ["CONFIRMING", "CONFIRMED", "FAILED"]},
                  "txHash": nullable(STRING)}, description="A row of GET /dashboard/payouts (upper-case status).")

OPERATIONS = [
    Op("POST", "/v1/payout", "Send a payout", PAYOUTS, envelope(ref("Payout")), auth=PAYOUT_KEY,
       scope="payout:create", body=body(PAYOUT_FIELDS, PAYOUT_OPTIONAL),
       description="Validated, debited and queued: status Confirming. 400 invalid_address, burn_address, "
                   "insufficient_balance, coin_not_supported (unknown or source-only coin), self_transfer (one "
                   "of your own deposit addresses); 403 merchant_disabled; 503 payout_backlog_too_large."),
    Op("GET", "/v1/payout/{track_id}", "A payout", PAYOUTS, envelope(ref("Payout")), auth=PAYOUT_KEY,
       scope="payout:read"),
    Op("POST", "/v1/payout/batch", "Send up to 100 payouts", PAYOUTS, data_only(ref("BatchResult")),
       auth=PAYOUT_KEY, scope="payout:create",
       body=body({"items": array(body({**PAYOUT_FIELDS, "external_id": {"type": "string", "maxLength": 128}}),
                                 minItems=1, maxItems=100)}),
       description="Each item on its own; a body with only data. 400 batch_empty, batch_too_large, "
                   "duplicate_external_id."),
    Op("POST", "/v1/payment/{track_id}/refund", "Refund a Paid payment", PAYOUTS, envelope(ref("Refund")),
       auth=PAYOUT_KEY, scope="payout:create",
       body=body({"destination": ADDRESS},
                 {"amount": AMOUNT, "amount_usd": AMOUNT, "description": {"type": "string", "maxLength": 500},
                  "external_id": {"type": "string", "maxLength": 128}}),
       description="Creates a payout in the payment's pay currency; without amount or amount_usd the whole "
                   "remaining balance is refunded."),
    Op("POST", "/dashboard/create-payout", "Send a payout", PAYOUTS, envelope(ref("Payout")), auth=JWT,
       body=body(PAYOUT_FIELDS, PAYOUT_OPTIONAL), scope="payout:create"),
    Op("GET", "/dashboard/payouts", "List payouts", PAYOUTS, envelope(page("payouts", PAYOUT_ROW)), auth=JWT,
       query=(Param("limit", {"type": "integer", "minimum": 1, "maximum": 200, "default": 20}),
              Param("offset", {"type": "integer", "minimum": 0, "default": 0})), scope="payout:read"),
    Op("POST", "/v1/transfer", "Internal transfer", TRANSFERS, data_only(ref("Transfer")), auth=MERCHANT_KEY,
       scope="transfer:create", body=TRANSFER_BODY,
       description="Instant and fee-free; a body with only data. 400 self_transfer_forbidden, "
                   "recipient_not_found, recipient_disabled, insufficient_balance, coin_not_supported; "
                   "401 wrong TOTP code."),
    Op("POST", "/dashboard/transfer", "Internal transfer", TRANSFERS, data_only(ref("Transfer")), auth=JWT,
       body=TRANSFER_BODY, scope="transfer:create"),
    Op("GET", "/dashboard/transfers", "Transfers sent and received", TRANSFERS,
       envelope(page("transfers", ref("TransferRow"))), auth=JWT,
       query=(Param("limit", {"type": "integer", "minimum": 1, "maximum": 500, "default": 100}),
              Param("offset", {"type": "integer", "minimum": 0, "default": 0})), scope="balance:read"),
]
