"""``orbchain.api``: everything a plugin may use, under one name.

A plugin, built-in or third-party, imports Orbchain only from here (the way
a pytest plugin imports from ``pytest``)::

    from orbchain.api import Gateway, ValidationError, hookimpl, requires

What is listed in ``__all__`` is the contract (docs/plugins.md, "The public
API"); the modules behind it are the core's to rearrange. Groups a plugin
rarely needs are sub-namespaces: ``orbchain.api.ledger`` (posting and
reading ledger transactions), ``orbchain.api.openapi`` (documenting routes),
``orbchain.api.addresses`` (a chain's address derivation and encoding) and
``orbchain.api.merchant`` (a merchant's own operations, for front-ends such
as the dashboard and Telegram). ``make lint`` (import-linter) refuses any
other import of ``orbchain`` from ``plugins/`` and ``chains/``.

This module only re-exports: no code lives here.
"""

# Declaring hooks: the marker every hook implementation carries, and calling a hook from a plugin.
from ..core.contract.plugins import call_collect, for_key_kinds, hookimpl

# Declaring hooks of your own for the plugins that build on yours (register_hookspecs), and their registries.
from ..core.contract.hookspecs import hookspec
from ..core.contract.registries import Registry

# A plugin set built by hand (a plugin's own tests, a tool): entry points plus the plugins given.
from ..core.contract.plugins import get_plugin_manager

# The gateway every hook receives, and its configuration.
from ..core.gateway import Gateway

# The gateway's machinery as far as a plugin needs it: another plugin loaded here, a database outage.
from ..core.contract.plugin_services import database_away, plugin_loaded
from ..core.infra.config import Config

# A plugin's state for the gateway's lifetime: gateway.services[KEY], typed by the key (string keys are deprecated).
from ..core.types.services import ServiceKey, Services

# Reading a plugin's own [plugin.<name>] block: each reader raises ConfigError naming the bad key.
from ..core.infra.config import ConfigError, checked_block, int_setting, seconds_setting, text_setting

# Coins and address families (register_coins, register_address_families), and the key derivation they name.
from ..core.money.coins import Coin, CoinRegistry
from ..core.keys import (
    ED25519, NETWORKS, SECP256K1, AddressError, AddressFamily, AddressFamilyRegistry, DerivationScheme,
    UnknownFamilyError, WatchOnlyError, coin_type_for,
)

# The chain adapter contract (register_chains): blocks, transfers, payouts and what an adapter declares.
from ..core.types.chains import (
    Block, BlockRef, BlocksPruned, BroadcastError, Capability, ChainAdapter, ChainUnavailable, CustodyPlace,
    DropClosure, FeeAboveCeiling,
    Holding, HotWalletShort, PastTransfer,
    NodeState, PayoutOrder, PayoutSender, PayoutStatus, SignedPayout, Transfer,
)

# Several nodes per chain: failover for every call, and tip/blocks agreed by a quorum of them.
from ..core.contract.nodes import NodeQuorum, NodeSet, lag_setting, node_name, node_urls_setting, quorum_setting

# What a node says about itself (network, genesis, sync), checked before it is asked anything else.
from ..core.types.node_identity import NodeIdentity, Refusal, judge_node
from ..core.infra.config import tip_age_setting

# Receiving: where a payer pays (payment_receive_target), and deposits a plugin reports or finishes crediting.
from ..core.payments.receive import ReceiveTarget
from ..core.watching.deposits import complete_credit, observe_final

# Ledger postings and account names (credit_postings, a plugin's own accounts), and reading an account's balance.
from ..core.ledger.book import Posting
from ..core.ledger.book import balance as ledger_balance
from ..core.ledger.book import balances as ledger_balances
from ..core.ledger.accounts import (
    NETWORK_FEES, PLATFORM_FEES, WORLD_PREFIX, chain_hot_wallet, merchant_available, merchant_held, payouts_in_flight,
    world,
)
from ..core.ledger.accounts import SEPARATOR as ACCOUNT_SEPARATOR

# The operator's hot-wallet limits per coin ([custody.hot_wallet.<COIN>]), in base units.
from ..core.custody.hot_wallet import HotWalletLimits, hot_wallet_limits
from ..core.events.operator import notify_cold_sweep

# Frozen views that event and filter hooks receive instead of database rows.
from ..core.types.views import (
    Credit, DepositView, KeyRequest, Member, MemberLogin, PaymentView, PayoutView, ProvenAddress, SecurityEvent,
)

# Webhook events a plugin declares (register_event_kinds) and sends through the core's outbox.
from ..core.events.outbox import OutboxEvent, enqueue_event, enqueue_events

# Errors: raise them from a route or a service and the caller gets the SPEC's envelope with their status.
from ..core.types.errors import (
    ApiError, Conflict, Forbidden, Gone, InsufficientBalance, InvalidRequest, Maintenance, NotConfigured, NotFound,
    PayloadTooLarge, RateLimited, ServiceUnavailable, Unauthorized, ValidationError,
)

# Schema migrations (register_migrations), and running them from a plugin's own CLI command.
from ..core.infra.migrate import Migration, append_only, migrate

# A list's exact total kept by the database (a migration's triggers), read in a few rows however long the list.
from ..core.infra.kept_counts import KeptList

# Money: exact decimal parsing and base units (amounts are ints, never floats).
from ..core.money.amounts import AmountError, fiat_decimals, fiat_text, format_units, parse_decimal, to_base_units

# The database handle (gateway.db: SQL with :name parameters, amount_param, to_int, transaction) and its helpers.
from ..core.infra.db import Database, is_unique_violation

# A plugin's own merchant-owned rows: one statement each, scoped to the merchant.
from ..core.contract.plugin_rows import (
    delete_rows_naming, found, insert_statement, merchant_row, merchant_row_count, merchant_rows, update_row,
)

# Core services: what a plugin needs of core data, as immutable records (docs/plugins.md, "Core services").
from ..core.receiving.address_services import (
    AddressKey, ReceiveAddress, address_key, fresh_receive_address, has_standing_address, receive_address,
)
from ..core.receiving.address_services import AddressAccount, address_accounts, address_counter
from ..core.watching.deposit_services import (
    CreditedAddress, CreditedOutput, DepositRecord, credited_addresses, credited_outputs, find_deposit,
    recent_deposits,
)
from ..core.ledger.ledger_services import (
    USD_DECIMALS,
    available_balance,
    ledger_history,
    reversed_references,
    usd_price,
    usd_units,
)
from ..core.accounts.merchant_services import (
    MerchantRecord, api_key_exists, default_settlement_coin, merchant_by_account_id, merchant_record,
    referred_merchants, set_default_settlement_coin,
)
from ..core.receiving.payment_services import PaymentRecord, check_receivable, find_payment, receivable_coins
from ..core.payouts.payout_services import payout_statuses
from ..core.payouts.signing_gate import authorize_fee_bump, authorize_hot_wallet_spend
from ..core.accounts.plugin_cache import cache_changed, cache_changed_everywhere, cached

# Core services that create: hosted invoices and payouts through the standard pipeline.
from ..core.receiving.payment_services import InvoiceRecord, check_invoice_amount, create_invoice, new_track_id
from ..core.payouts.payout_services import PayoutRecord, payout_amount, payout_destination, request_payout
# Payouts a plugin held (decide_payout_hold): let one go to the worker, or fail it and give the reserve back.
from ..core.payouts.holds import (
    approve_held_payout, lock_merchant_money, reject_held_payout, released_subjects,
)
from ..core.transfers.holds import approve_held_transfer, reject_held_transfer

# Core services for plugins that sign merchants in or guard an account (identity providers, chat links).
from ..core.accounts.security_events import SIGN_IN
from ..core.accounts.account_services import (
    AccountRecord, AccountSession, account_by_email, announce_security_event, confirm_account_holder, create_account,
    dashboard_token_revoked, hash_password, revoke_dashboard_token, revoke_dashboard_tokens, sign_in_account,
    sign_in_member,
)
# The acting principal's own second factor (the holder's TOTP, or a team member's): every step-up asks this.
from ..core.accounts.second_factor import forget_member_second_factor, verify_second_factor
# The second factor of a sign-in (the holder's or a member's code, or a recovery code), and the page between.
from ..core.accounts.sign_in_factor import (
    SecondFactorDue, SecondFactorRequired, check_sign_in_code, second_factor_due,
)
from ..core.accounts.sign_in_steps import MemberRemoved, SignInStepSpent, begin_sign_in_step, finish_sign_in_step
# Whom an API key acts for (``holder``, ``member:<id>``): a member leaving takes the keys they issued with them.
from ..core.accounts.key_powers import (
    KeyIssuer, describe_person, keys_issued_by, member_person, revoke_keys_issued_by,
)

# Dashboard slots and pages (register_dashboard_pages, dashboard_notices).
from ..core.types.pages import DashboardNotice, DashboardRedirect, DashboardView
# Proving a person holds an e-mail address (decide_address_prover, decide_proven_address): an identity provider.
from ..core.types.pages import AddressProver
from ..core.contract.registries import NAV_GROUPS, DashboardPage

# Hosted pages: branding, pay-page forms, the captcha widget, QR codes and webhook destinations.
from ..core.events.key_destination import WebhookDestination
from ..core.types.pages import (
    MAX_BRAND_NAME_LENGTH, MAX_LOGO_URL_LENGTH, THEME_MODES, BrandChoice, PageBranding, PayPageForm, SignInWidget,
    brand_color, logo_url, widget_token,
)
from ..core.types.contrast import accent_problem, readable_accent
from ..core.pages.qr import MAX_QR_DATA, qr_data_uri, qr_svg
from ..core.pages.services import brand_choices, check_public_form, form_widget, page_branding_for, screen_sign_in
from ..web.pages import html_page, page_security_headers, render_page, resources_at, security_headers

# Payer pages in the payer's language (docs/plugins.md "Translating payer pages"): the current page's language,
# the lookups templates and handlers share, and a plugin's own catalogue.
from ..core.types.messages import Translatable
from ..web.i18n import (
    LANGUAGES, add_catalogue, format_timestamp, gettext, gettext_noop, ngettext, pgettext, translate, using_language,
)
from ..web.i18n import language as page_language

# Live pages: the change feed's topic on gateway.signals (payload: the payment's track id, after each commit
# that changed its status, deposits or confirmations), the event stream a hosted payment's page follows, and
# the one a signed-in merchant's page serves for any of its payments (the plugin checks its own session).
from ..core.payments.changes import TOPIC as PAYMENT_CHANGED
from ..web.live_stream import merchant_payment_events
from ..web.routes.pay_events import events_path as pay_events_path

# Route helpers (register_routes): who calls, the gateway, the SPEC 7 envelope, bodies, limits, maintenance.
from ..core.infra.maintenance import refuse_in_maintenance
from ..web.auth import (
    EVERYONE, Principal, bind_principal, dashboard_principal, member_refused, missing_scope, principal_of, requires,
)
from ..web.edge import text_problem
from ..web.envelope import data_only, envelope, read_json
from ..web.form_body import read_form
from ..web.keys import GATEWAY, REQUEST_ID, gateway_of
from ..web.middlewares import client_ip, count_request, holds_no_connection, rate_class
from ..web.rate_identity import count_failure, refuse_if_blocked

# Validating request bodies and queries into 400s that name the field.
from ..web.validation import Field, body_idempotency_key, form_integer, int_from_text, pagination, validate

# USD prices (register_price_sources, gateway.services[PRICES]): for display, never for amounts.
from ..core.money.prices import (
    CACHE_SECONDS, FIAT_CURRENCIES, PRICES, STALE_LIMIT_SECONDS, PriceService, Quote, usable_quote, usd_value,
)

# Outbound HTTP to a URL a merchant or payer gave: refuse private addresses.
from ..core.infra.netguard import HTTP_SESSION, UnsafeUrl, check_public_url, outbound_session

# A key of the plugin's own, derived by purpose ("<plugin>/<name>") from the root secret it never sees.
from ..core.keys.derived import PurposeError, derived_key

# Plugin CLI commands (register_commands): the operator's secrets.
from ..core.keys.secrets import load_secrets

# Jobs (register_jobs): give back a claim when the process stops mid-run.
from ..core.infra.stopping import undone_if_cancelled

# Signals every process hears (gateway.signals): WAKE runs a job now in its leader, e.g. a chain's scan.
from ..core.infra.signals import RESET, WAKE, Signals
from ..core.watching.scanner import scan_job_name

__all__ = [
    # hooks
    "call_collect", "for_key_kinds", "hookimpl", "hookspec", "Registry",
    "get_plugin_manager",
    # gateway and configuration
    "Config", "ConfigError", "Gateway", "HotWalletLimits", "hot_wallet_limits", "notify_cold_sweep",
    "ServiceKey", "Services",
    "database_away", "plugin_loaded",
    "checked_block", "int_setting", "seconds_setting", "text_setting",
    # coins and address families
    "ED25519", "NETWORKS", "SECP256K1", "AddressError", "AddressFamily", "AddressFamilyRegistry", "Coin",
    "CoinRegistry", "DerivationScheme", "UnknownFamilyError", "WatchOnlyError", "coin_type_for",
    # chain adapters
    "Block", "BlockRef", "BlocksPruned", "BroadcastError", "Capability", "ChainAdapter", "ChainUnavailable",
    "CustodyPlace", "DropClosure", "FeeAboveCeiling", "Holding", "HotWalletShort",
    "NodeIdentity", "NodeQuorum", "NodeSet", "NodeState", "Refusal", "judge_node", "lag_setting", "tip_age_setting",
    "node_name",
    "node_urls_setting", "quorum_setting",
    "PastTransfer", "PayoutOrder", "PayoutSender", "PayoutStatus", "SignedPayout", "Transfer",
    # signals
    "RESET", "WAKE", "Signals", "scan_job_name",
    # receiving
    "ReceiveTarget", "complete_credit", "observe_final",
    # ledger
    "NETWORK_FEES", "PLATFORM_FEES", "WORLD_PREFIX", "Posting", "chain_hot_wallet", "ledger_balance",
    "ledger_balances", "merchant_available", "merchant_held", "payouts_in_flight", "world", "ACCOUNT_SEPARATOR",
    # views
    "Credit", "DepositView", "KeyRequest", "Member", "MemberLogin", "PaymentView", "PayoutView", "ProvenAddress",
    "SecurityEvent",
    # webhook events
    "OutboxEvent", "enqueue_event", "enqueue_events",
    # errors
    "ApiError", "Conflict", "Forbidden", "Gone", "InsufficientBalance", "InvalidRequest", "Maintenance",
    "NotConfigured", "NotFound", "PayloadTooLarge", "RateLimited", "ServiceUnavailable", "Unauthorized",
    "ValidationError",
    # migrations
    "Migration", "append_only", "migrate", "KeptList",
    # money
    "AmountError", "fiat_decimals", "fiat_text", "format_units", "parse_decimal", "to_base_units",
    # database
    "Database", "is_unique_violation",
    "delete_rows_naming", "found", "insert_statement", "merchant_row", "merchant_row_count", "merchant_rows",
    "update_row",
    # core services: reads
    "USD_DECIMALS", "AddressKey", "CreditedAddress", "CreditedOutput", "DepositRecord", "MerchantRecord",
    "PaymentRecord", "ReceiveAddress", "AddressAccount", "address_accounts", "address_counter", "address_key",
    "api_key_exists", "available_balance", "cache_changed", "cache_changed_everywhere",
    "cached", "check_receivable", "credited_addresses", "credited_outputs", "default_settlement_coin",
    "find_deposit", "find_payment", "fresh_receive_address", "has_standing_address", "ledger_history",
    "merchant_by_account_id", "merchant_record", "payout_statuses", "receivable_coins", "receive_address",
    "recent_deposits", "referred_merchants", "reversed_references", "set_default_settlement_coin", "usd_price",
    "usd_units",
    # core services: invoices and payouts
    "InvoiceRecord", "PayoutRecord", "authorize_fee_bump", "authorize_hot_wallet_spend", "check_invoice_amount",
    "create_invoice", "new_track_id", "payout_amount", "payout_destination",
    "request_payout", "approve_held_payout", "reject_held_payout", "approve_held_transfer", "reject_held_transfer",
    "lock_merchant_money", "released_subjects",
    # core services: accounts
    "SIGN_IN", "AccountRecord", "AccountSession", "account_by_email", "announce_security_event",
    "confirm_account_holder", "create_account", "forget_member_second_factor", "verify_second_factor",
    "MemberRemoved", "SecondFactorDue", "SecondFactorRequired", "SignInStepSpent", "begin_sign_in_step",
    "check_sign_in_code", "finish_sign_in_step", "second_factor_due", "screen_sign_in",
    "KeyIssuer", "describe_person", "keys_issued_by", "member_person", "revoke_keys_issued_by",
    "dashboard_token_revoked", "revoke_dashboard_token",
    "revoke_dashboard_tokens", "sign_in_account", "hash_password", "sign_in_member",
    # dashboard
    "NAV_GROUPS", "DashboardNotice", "DashboardPage", "DashboardRedirect", "DashboardView",
    # proving an e-mail address
    "AddressProver",
    # hosted pages
    "MAX_BRAND_NAME_LENGTH", "MAX_LOGO_URL_LENGTH", "MAX_QR_DATA", "THEME_MODES", "BrandChoice", "PageBranding",
    "PayPageForm",
    "SignInWidget", "accent_problem", "readable_accent", "WebhookDestination", "brand_choices", "brand_color",
    "check_public_form", "form_widget",
    "html_page",
    "logo_url", "page_branding_for", "page_security_headers", "qr_data_uri", "qr_svg", "render_page", "resources_at",
    "security_headers",
    "widget_token",
    # payer pages' languages
    "LANGUAGES", "Translatable", "add_catalogue", "format_timestamp", "gettext", "gettext_noop", "ngettext",
    "page_language", "pgettext", "translate", "using_language",
    # routes
    "EVERYONE", "GATEWAY", "REQUEST_ID", "Principal", "client_ip", "count_failure", "count_request", "data_only",
    "envelope",
    "gateway_of", "holds_no_connection", "merchant_payment_events", "PAYMENT_CHANGED", "pay_events_path",
    "principal_of", "rate_class",
    "read_form", "read_json", "bind_principal", "dashboard_principal", "member_refused", "missing_scope",
    "refuse_if_blocked", "refuse_in_maintenance", "requires", "text_problem",
    # validation
    "Field", "body_idempotency_key", "form_integer", "int_from_text", "pagination", "validate",
    # prices
    "CACHE_SECONDS", "FIAT_CURRENCIES", "PRICES", "PriceService", "Quote", "STALE_LIMIT_SECONDS", "usable_quote",
    "usd_value",
    # outbound HTTP
    "HTTP_SESSION", "UnsafeUrl", "check_public_url", "outbound_session",
    # CLI commands and jobs
    "load_secrets", "undone_if_cancelled",
    # keys by purpose
    "PurposeError", "derived_key",
]
