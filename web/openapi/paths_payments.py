"""Payments (SPEC 4.2), deposits, balance (4.6) and their dashboard twins (4.7)."""

from __future__ import annotations

from .operations import Op, Param, body
from .schemas import AMOUNT, COIN, RECEIPT_KEY, STRING, array, envelope, obj, page, ref

PAYMENTS, DASHBOARD = "Payments", "Dashboard: payments"
KEY, JWT = ("merchant_key",), ("jwt",)
CREATE, READ = "payment:create", "payment:read"

FIAT = ["USD", "EUR", "GBP", "JPY", "CAD", "AUD", "CHF", "CNY", "INR", "RUB"]
TEXT128 = {"type": "string", "maxLength": 128}
URL = {"type": "string", "format": "uri", "maxLength": 500}
LIFETIME = {"type": "integer", "minimum": 1, "maximum": 43200, "description": "Minutes."}
COMMON = {"order_id": TEXT128, "description": {"type": "string", "maxLength": 500}, "callback_url": URL,
          "user_id": TEXT128}

STATIC_BODY = body({"currency": COIN}, COMMON)
WHITE_LABEL_BODY = body(
    {"currency": COIN},
    {"amount": AMOUNT, "amount_fiat": AMOUNT, "fiat_currency": {"type": "string", "enum": FIAT},
     "pay_currency": COIN, "lifetime": LIFETIME, **COMMON,
     "splits": array(obj({"bps": {"type": "integer", "minimum": 1, "maximum": 10000}},
                         {"recipient_merchant_id": STRING, "recipient_address": STRING}), maxItems=10),
     "settlement_coin": COIN},
    description="Exactly one of amount or amount_fiat (with fiat_currency). A fiat amount has at most its "
                "currency's minor unit (2 decimals; JPY none); what the payer is asked for is at least the pay "
                "coin's smallest payment (its dust limit or rent floor), else 400 validation naming the field "
                "with the minimum in the amount's currency.",
)
INVOICE_BODY = body(
    {"amount": AMOUNT},
    {"currency": {"type": "string", "description": "A fiat code or a coin symbol; default the first accepted coin."},
     "lifetime": LIFETIME, "expires_in": {"type": "integer", "minimum": 60, "description": "Seconds (alias)."},
     "return_url": URL, "cancel_url": URL, "email": {"type": "string", "format": "email"},
     "customer_email": {"type": "string", "format": "email", "description": "Alias of email."},
     "accepted_coins": array(COIN, minItems=1), "pay_currency": COIN, **COMMON},
    description="amount in a fiat currency has at most its minor unit (2 decimals; JPY none); what the payer is "
                "asked for is at least the pay coin's smallest payment, else 400 validation naming amount.",
)
DASHBOARD_BODY = body(
    {"type": {"type": "string", "enum": ["static_address", "white_label", "invoice"]}},
    {**WHITE_LABEL_BODY["properties"], **INVOICE_BODY["properties"], "currency": STRING},
    description="The body of the matching /v1/payment endpoint plus type.",
)

PAGING = (Param("limit", {"type": "integer", "minimum": 1, "maximum": 200, "default": 20}),
          Param("offset", {"type": "integer", "minimum": 0, "default": 0}))
LIST_QUERY = (
    Param("status", {"type": "string", "enum": ["WAITING", "PAYING", "PAID", "EXPIRED", "CANCELLED"]}),
    Param("type", {"type": "string", "enum": ["STATIC_ADDRESS", "WHITE_LABEL", "INVOICE"]}),
    Param("order_id", TEXT128, "Exact match."),
    Param("currency", {"type": "string"}),
    *PAGING,
    Param("sort_order", {"type": "string", "enum": ["asc", "desc"], "default": "desc"}, "By created_at."),
)
DEPOSIT_QUERY = (
    Param("coin", {"type": "string"}),
    Param("status", {"type": "string", "enum": ["PENDING", "CONFIRMED", "CREDITED", "FAILED"]}),
    Param("address", {"type": "string"}, "Exact match."),
    Param("user_id", TEXT128),
    Param("since", {"type": "integer", "minimum": 0}, "Deposits created at or after (Unix seconds)."),
    Param("limit", {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}),
    Param("offset", {"type": "integer", "minimum": 0, "default": 0}),
    Param("sort_order", {"type": "string", "enum": ["asc", "desc"], "default": "desc"}),
)

PAYMENT = envelope(ref("Payment"))
PAYMENT_LIST = envelope(page("payments", ref("PaymentSummary")))
RECEIPT = envelope(obj({"receipt": ref("Receipt"), "canonical": STRING,
                        "signature": {"type": "string", "contentEncoding": "base64"},
                        **RECEIPT_KEY["properties"]}))


OPERATIONS = [
    Op("POST", "/v1/payment/static-address", "Create a static address payment", PAYMENTS, PAYMENT,
       auth=KEY, scope=CREATE, body=STATIC_BODY,
       description="The same (user_id, currency) gets the same address."),
    Op("POST", "/v1/payment/white-label", "Create a white-label payment", PAYMENTS, PAYMENT,
       auth=KEY, scope=CREATE, body=WHITE_LABEL_BODY),
    Op("POST", "/v1/payment/invoice", "Create an invoice (hosted page)", PAYMENTS, PAYMENT,
       auth=KEY, scope=CREATE, body=INVOICE_BODY),
    Op("GET", "/v1/payment/accepted-currencies", "Coins the merchant accepts", PAYMENTS,
       envelope(obj({"accepted_coins": array(COIN)})), auth=KEY, scope=READ),
    Op("GET", "/v1/payment", "List payments", PAYMENTS, PAYMENT_LIST, auth=KEY, scope=READ, query=LIST_QUERY),
    Op("GET", "/v1/payment/{track_id}", "A payment with its transactions", PAYMENTS, PAYMENT,
       auth=KEY, scope=READ),
    Op("GET", "/v1/payment/{track_id}/receipt", "Signed receipt of a Paid payment", PAYMENTS, RECEIPT,
       auth=KEY, scope=READ, errors=(400,), description="400 payment_not_paid before the payment is Paid."),
    Op("POST", "/v1/payment/{track_id}/cancel", "Cancel a Waiting payment", PAYMENTS, PAYMENT,
       auth=KEY, scope=CREATE, errors=(400,), description="400 payment_not_cancellable unless Waiting."),
    Op("GET", "/v1/deposits", "List deposits", PAYMENTS, envelope(page("deposits", ref("Deposit"))),
       auth=KEY, scope=READ, query=DEPOSIT_QUERY),
    Op("GET", "/v1/general/account/balance", "Balances", PAYMENTS, envelope(ref("Balances")),
       auth=("general_key",), scope="balance:read"),
    # dashboard twins
    Op("GET", "/dashboard/payments", "List payments", DASHBOARD, PAYMENT_LIST, auth=JWT, query=LIST_QUERY,
       scope="payment:read"),
    Op("GET", "/dashboard/payments/{track_id}", "A payment", DASHBOARD, PAYMENT, auth=JWT, scope="payment:read"),
    Op("POST", "/dashboard/payments/{track_id}/cancel", "Cancel a Waiting payment", DASHBOARD, PAYMENT,
       auth=JWT, errors=(400,), scope="payment:create"),
    Op("POST", "/dashboard/create-payment", "Create a payment", DASHBOARD, PAYMENT, auth=JWT, body=DASHBOARD_BODY,
       scope="payment:create"),
    Op("GET", "/dashboard/balances", "Balances", DASHBOARD, envelope(ref("Balances")), auth=JWT, scope="balance:read"),
    Op("GET", "/dashboard/transactions", "Recent deposits and payouts", DASHBOARD,
       envelope(obj({
           "deposits": array(obj({"id": STRING, "coin": COIN, "amount": AMOUNT, "amountUsd": AMOUNT,
                                  "status": {"type": "string", "enum": ["PENDING", "CONFIRMED", "CREDITED", "FAILED"]},
                                  "confirmations": {"type": "integer", "minimum": 0}})),
           "payouts": array(obj({"id": STRING, "coin": COIN, "destination": STRING, "amount": AMOUNT,
                                 "status": {"type": "string", "enum": ["CONFIRMING", "CONFIRMED", "FAILED"]}})),
       })), auth=JWT,
       query=(Param("limit", {"type": "integer", "minimum": 1, "maximum": 500, "default": 100},
                    "Applied to deposits and payouts separately."),), scope="balance:read"),
    Op("GET", "/dashboard/deposit-addresses", "Standing deposit addresses", DASHBOARD,
       envelope(obj({"account_id": ref("AccountId"),
                     "addresses": array(obj({"coin": COIN, "address": STRING,
                                             "qr": {"type": "string", "description": "Image data URI."}}))})),
       auth=JWT, errors=(503,), description="503 busy when the CPU pool that draws the QR codes is full.",
       scope="payment:read"),
    Op("GET", "/dashboard/receive-address", "The standing address of one coin", DASHBOARD,
       envelope(obj({"coin": COIN, "address": STRING})), auth=JWT,
       query=(Param("coin", COIN, "One of the accepted coins.", required=True),),
       description="400 missing_coin, coin_not_accepted or xmr_receive_unsupported.", scope="payment:read"),
]
