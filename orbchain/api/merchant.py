"""``orbchain.api.merchant``: a merchant's own operations, for plugins that are a front-end to the account.

The dashboard and the Telegram mini-app let a signed-in merchant do what
the merchant API does (payments, payouts, transfers, refunds, keys,
settings); they call the same core operations and parse bodies with the
same field lists as the JSON routes, so both doors answer alike. A feature
plugin rarely needs these: ``orbchain.api``'s core services are its
contract.
"""

# The account: sign-up, log-in and the merchant row a session names.
from ..core.accounts.merchants import account_view, accepted_coins, get_merchant, log_in, require_merchant, sign_up
from ..core.accounts.auth import JWT_LIFETIME_SECONDS
from ..core.accounts.dashboard_tokens import dashboard_token_claims

# Settings: webhook, accepted coins, confirmations, static mode, the legacy keys.
from ..core.accounts.merchants import (
    check_webhook_url, rotate_legacy_key, set_accepted_coins, set_confirmations, set_customer_static_mode,
    set_display_name, set_webhook,
)

# Two-factor authentication; DASHBOARD_CHANNEL names the dashboard's TOTP lockout channel.
from ..core.accounts.merchants import disable_totp, enable_totp, start_totp_setup, verify_totp
from ..core.accounts.auth import normalize_totp_code
from ..core.accounts.lockout import DASHBOARD_CHANNEL
# A team member's own 2FA (their Security page); ``orbchain.api.verify_second_factor`` checks whoever acts.
from ..core.accounts.second_factor import (
    disable_member_totp, enable_member_totp, member_totp_enabled, start_member_totp_setup,
)
# Recovery codes (made with 2FA, renewed with a fresh code) of the holder (member_id None) or a member.
from ..core.accounts.second_factor import recovery_codes_left, renew_recovery_codes

# Scoped API keys; creating or rotating one needs its scopes (``may_rotate`` for what a page offers).
from ..core.accounts.api_keys import (
    ScopedKeyRequest,
    change_key_brand,
    check_key_brand,
    create_scoped_key,
    list_api_keys,
    may_rotate,
    revoke_scoped_key,
    rotate_scoped_key,
)
from ..core.accounts.key_powers import may_rotate_legacy
from ..web.routes.dashboard_keys import create_fields
from ..web.routes.dashboard_settings import KEY_TYPES
from ..web.routes.dashboard_auth import validate_with_passwords

# Payments: the API's types and statuses, creating, showing, listing, cancelling; receipts; balances.
from ..core.ledger.book import merchant_balances
from ..core.payments.service import (
    INVOICE, PAID, PAYMENT_TYPES, STATIC, STATUSES, WHITE_LABEL, cancel_payment, create_payment, get_payment,
    list_payments, payable_coins, servable_coins, show_payment,
)
from ..core.payments.receipts import issue_receipt
from ..web.routes.payments import LIST_FIELDS, balances_of, parse_payment_request

# Payouts (one, or a batch) and refunds, as POST /v1/payout, /v1/payout/batch and /v1/payment/{id}/refund do them.
from ..core.payouts.worker import create_and_send
from ..core.payouts.service import (
    BATCH_NS, KEY_NS, PayoutRequest, check_destination, failure_reasons, fingerprint, item_error, list_payouts,
    namespaced, payout_route, payout_units,
)
from ..core.refunds.service import RefundRequest, refund_payment
from ..web.routes.payouts import BATCH_ITEM_FIELDS, MAX_BATCH_ITEMS, PAYOUT_FIELDS, REFUND_FIELDS

# Internal transfers between merchants; DASHBOARD is the source recorded for a transfer not made through the API.
from ..core.transfers.service import DASHBOARD, TransferRequest, is_account_id, list_transfers, send_transfer
from ..web.routes.transfers import parse_transfer

# One payment's deposits with their fees, refunds and webhooks with their attempts (the dashboard's detail page).
from ..core.payments.history import payment_history

# Webhook deliveries: the log and redelivery.
from ..core.events.webhooks import RESEND_GAP_SECONDS, Redelivery, delivery_log, redeliver, redeliverable_events
from ..core.events.test_event import send_test_event

__all__ = [
    # account
    "JWT_LIFETIME_SECONDS", "account_view", "accepted_coins", "dashboard_token_claims", "get_merchant", "log_in",
    "require_merchant", "sign_up",
    # settings
    "check_webhook_url", "rotate_legacy_key", "set_accepted_coins", "set_confirmations", "set_customer_static_mode",
    "set_display_name",
    "set_webhook",
    # two-factor authentication
    "DASHBOARD_CHANNEL", "disable_totp", "enable_totp", "normalize_totp_code", "start_totp_setup", "verify_totp",
    "disable_member_totp", "enable_member_totp", "member_totp_enabled", "start_member_totp_setup",
    "recovery_codes_left", "renew_recovery_codes",
    # scoped API keys
    "KEY_TYPES", "ScopedKeyRequest", "change_key_brand", "check_key_brand", "create_fields", "create_scoped_key",
    "list_api_keys", "may_rotate",
    "may_rotate_legacy", "revoke_scoped_key", "rotate_scoped_key", "validate_with_passwords",
    # payments
    "INVOICE", "LIST_FIELDS", "PAID", "PAYMENT_TYPES", "STATIC", "STATUSES", "WHITE_LABEL", "balances_of",
    "cancel_payment", "create_payment", "get_payment", "issue_receipt", "list_payments", "merchant_balances",
    "parse_payment_request", "payable_coins", "payment_history", "servable_coins", "show_payment",
    # payouts and refunds
    "BATCH_ITEM_FIELDS", "BATCH_NS", "KEY_NS", "MAX_BATCH_ITEMS", "PAYOUT_FIELDS", "REFUND_FIELDS", "PayoutRequest",
    "RefundRequest", "check_destination", "create_and_send", "failure_reasons", "fingerprint", "item_error",
    "list_payouts", "namespaced", "payout_route", "payout_units", "refund_payment",
    # transfers
    "DASHBOARD", "TransferRequest", "is_account_id", "list_transfers", "parse_transfer", "send_transfer",
    # webhook deliveries
    "RESEND_GAP_SECONDS", "Redelivery", "delivery_log", "redeliver", "redeliverable_events", "send_test_event",
]
