"""Core service functions for plugins and the web layer: documented views, never rows.

A plugin owns its schema and never reads core tables (STYLE.md, BTCPay's
"do not depend on undocumented core table layouts"): what a plugin needs of
payments, deposits, deposit addresses and payouts it asks here, and gets an
immutable ``NamedTuple`` whose fields are listed in docs/plugins.md ("Core
services for plugins"). The core may change its tables; these functions
and views keep their meaning. Amounts are integers in the coin's base units.
``tests/test_plugin_sql.py`` fails when SQL in ``chains/`` or ``plugins/``
names a core table.
"""

from __future__ import annotations

import logging
from decimal import ROUND_HALF_EVEN, Decimal
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Iterable, Mapping, NamedTuple, Sequence

from . import (accounts, addresses, auth_cache, jwt_revocation, ledger, payments, payout_worker, payouts, plugin_rows,
               security_events)
from .pages import PageBranding, SignInWidget
from .plugins import call_first
from .db import is_unique_violation
from .deposits import CREDITED
from .errors import Forbidden, InvalidRequest
from .maintenance import refuse_in_maintenance
from .ledger_accounts import merchant_available
from .payments import OPEN_STATUSES
from .receive import receive_unsupported_code, require_receive_address
from .views import PaymentView

if TYPE_CHECKING:  # pragma: no cover
    from .coins import Coin
    from .gateway import Gateway

log = logging.getLogger(__name__)


class PaymentRecord(NamedTuple):
    """One payment as a plugin sees it.

    ``status`` is the SPEC's mixed-case status (``Waiting``, ``Paying``,
    ``Paid``, ``Expired``, ``Cancelled``); ``is_open`` is True while it can
    still receive funds (Waiting or Paying). ``pay_amount`` is None when the
    payer chooses the amount (a static address). ``address`` is None until
    the payment has one.
    """

    track_id: str
    merchant_id: str
    status: str
    is_open: bool
    pay_currency: str
    pay_amount: int | None
    address: str | None


class DepositRecord(NamedTuple):
    """One observed deposit. ``status`` is PENDING, CONFIRMED, CREDITED or FAILED;
    ``amount_usd`` is the decimal text valued when seen ("0" when unknown);
    times are Unix seconds, ``credited_at`` None until credited."""

    id: str
    merchant_id: str
    chain: str
    coin: str
    address: str
    tx_hash: str
    output_index: int
    amount: int
    amount_usd: str
    status: str
    confirmations: int
    track_id: str | None
    created_at: int
    credited_at: int | None


class CreditedOutput(NamedTuple):
    """A credited deposit output the gateway holds the key of (a UTXO chain's hot wallet).

    ``key_account`` and ``key_index`` locate its key in the operator's seed
    (the merchant's HD account, the address's index).
    """

    tx_hash: str
    output_index: int
    address: str
    coin: str
    amount: int
    key_account: int
    key_index: int


class CreditedAddress(NamedTuple):
    """A deposit address with credited deposits of ``coin``; ``last_credited_at`` is the newest credit's time."""

    address: str
    coin: str
    last_credited_at: int


class AddressKey(NamedTuple):
    """Where one of the gateway's deposit addresses comes from in the seed."""

    address: str
    family: str
    network: str
    merchant_id: str
    key_account: int
    key_index: int


def _int_or_none(gateway: "Gateway", value: object) -> int | None:
    return None if value is None else gateway.db.to_int(value)


async def find_payment(gateway: "Gateway", track_id: str) -> PaymentRecord | None:
    """The payment with ``track_id``, or None. Any merchant's: check ``merchant_id`` yourself when it matters."""
    row = await gateway.db.fetch_one(
        "SELECT track_id, merchant_id, status, pay_currency, pay_amount, address FROM payments WHERE track_id = :t",
        {"t": track_id})
    if row is None:
        return None
    return PaymentRecord(row["track_id"], row["merchant_id"], row["status"], row["status"] in OPEN_STATUSES,
                         row["pay_currency"], _int_or_none(gateway, row["pay_amount"]), row["address"])


async def recent_deposits(gateway: "Gateway", merchant_id: str, limit: int) -> list[DepositRecord]:
    """The merchant's newest ``limit`` deposits, newest first."""
    rows = await gateway.db.fetch_all(
        "SELECT * FROM deposits WHERE merchant_id = :m ORDER BY created_at DESC, id DESC LIMIT :l",
        {"m": merchant_id, "l": limit})
    return [_deposit_record(gateway, r) for r in rows]


async def find_deposit(gateway: "Gateway", deposit_id: str) -> DepositRecord | None:
    """One deposit by id (any merchant's: check ``merchant_id`` where it matters), or None."""
    row = await gateway.db.fetch_one("SELECT * FROM deposits WHERE id = :id", {"id": deposit_id})
    return None if row is None else _deposit_record(gateway, row)


def _deposit_record(gateway: "Gateway", r: Any) -> DepositRecord:
    return DepositRecord(r["id"], r["merchant_id"], r["chain"], r["coin"], r["address"], r["tx_hash"],
                         int(r["output_index"]), gateway.db.to_int(r["amount"]), r["amount_usd"] or "0", r["status"],
                         int(r["confirmations"]), r["track_id"], int(r["created_at"]),
                         _int_or_none(gateway, r["credited_at"]))


async def credited_outputs(gateway: "Gateway", chain: str, network: str) -> list[CreditedOutput]:
    """Every credited deposit output on ``chain`` to an address derived for ``network``.

    Spent or not: what the gateway spent is the plugin's own record, so the
    plugin subtracts it. A reorg that un-credits a deposit removes it here.
    """
    rows = await gateway.db.fetch_all(
        "SELECT d.tx_hash, d.output_index, d.address, d.coin, d.amount, a.key_index, m.key_account FROM deposits d"
        " JOIN deposit_addresses a ON a.address = d.address"
        " JOIN merchants m ON m.id = a.merchant_id"
        " WHERE d.chain = :c AND d.status = :credited AND a.network = :n",
        {"c": chain, "credited": CREDITED, "n": network})
    return [CreditedOutput(r["tx_hash"], int(r["output_index"]), r["address"], r["coin"],
                           gateway.db.to_int(r["amount"]), int(r["key_account"]), int(r["key_index"]))
            for r in rows]


async def credited_addresses(gateway: "Gateway", chain: str) -> list[CreditedAddress]:
    """Each (address, coin) on ``chain`` with credited deposits, ordered by address then coin."""
    rows = await gateway.db.fetch_all(
        "SELECT address, coin, MAX(credited_at) AS last_credited_at FROM deposits"
        " WHERE chain = :c AND status = :credited GROUP BY address, coin ORDER BY address, coin",
        {"c": chain, "credited": CREDITED})
    return [CreditedAddress(r["address"], r["coin"], int(r["last_credited_at"] or 0)) for r in rows]


async def address_key(gateway: "Gateway", address: str, family: str) -> AddressKey | None:
    """Where the deposit address ``address`` of ``family`` was derived, or None when it is not ours."""
    row = await gateway.db.fetch_one(
        "SELECT a.address, a.family, a.network, a.merchant_id, a.key_index, m.key_account FROM deposit_addresses a"
        " JOIN merchants m ON m.id = a.merchant_id WHERE a.address = :a AND a.family = :f",
        {"a": address, "f": family})
    if row is None:
        return None
    return AddressKey(row["address"], row["family"], row["network"], row["merchant_id"], int(row["key_account"]),
                      int(row["key_index"]))


async def payout_statuses(gateway: "Gateway", payout_ids: Iterable[str]) -> dict[str, str]:
    """The status (``Confirming``, ``Confirmed``, ``Failed``) of each known payout id; unknown ids are absent."""
    ids = sorted(set(payout_ids))
    found: dict[str, str] = {}
    for start in range(0, len(ids), 500):  # bounded IN lists on both databases
        chunk = ids[start:start + 500]
        names = {f"p{i}": payout_id for i, payout_id in enumerate(chunk)}
        rows = await gateway.db.fetch_all(
            f"SELECT id, status FROM payouts WHERE id IN ({', '.join(':' + n for n in names)})", names)
        found.update({r["id"]: r["status"] for r in rows})
    return found


# -- balances and payouts for feature plugins (schedules, auto-withdraw) ------------------------


class PayoutRecord(NamedTuple):
    """A payout a plugin asked for: ``replay`` is True when its idempotency key already named one."""

    id: str
    track_id: str
    status: str
    amount: int
    replay: bool


# Plugin idempotency keys are "<namespace>:<rest>"; the core's own namespaces are refused
# so a plugin's key never replays a merchant's API payout, batch item or refund.
_CORE_KEY_NAMESPACES = frozenset({"key", "batch", "refund"})


async def available_balance(gateway: "Gateway", merchant_id: str, coin: str) -> int:
    """The merchant's spendable balance of ``coin`` in base units (what a full-balance payout sends)."""
    return max(0, await ledger.balance(gateway.db, merchant_available(merchant_id), coin))


class MerchantRecord(NamedTuple):
    """A merchant as a plugin sees it: public account id and accepted coins in the merchant's order,
    who referred it at sign-up (None when nobody did), when it signed up (Unix seconds) and whether
    the account is enabled."""

    merchant_id: str
    account_id: str
    accepted_coins: tuple[str, ...]
    referrer_id: str | None = None
    signed_up_at: int = 0
    enabled: bool = True


def _merchant_record(row: Any) -> MerchantRecord:
    return MerchantRecord(row["id"], row["account_id"], tuple(accounts.accepted_coins(row)), row["referrer_id"],
                          int(row["created_at"]), bool(row["enabled"]))


async def merchant_record(gateway: "Gateway", merchant_id: str) -> MerchantRecord:
    """The merchant's record (404 ``not_found`` for an unknown merchant)."""
    return _merchant_record(await accounts.require_merchant(gateway.db, merchant_id))


async def default_settlement_coin(gateway: "Gateway", merchant_id: str) -> str | None:
    """The account's ``default_settlement_coin`` (SPEC 2.7: core account data; the settling plugin interprets it)."""
    return (await accounts.require_merchant(gateway.db, merchant_id))["default_settlement_coin"] or None


async def set_default_settlement_coin(gateway: "Gateway", merchant_id: str, symbol: str | None) -> None:
    """Set (or clear, with None) the account's ``default_settlement_coin``; the settling plugin validates it."""
    await accounts.set_default_settlement_coin(gateway, merchant_id, symbol)


USD_DECIMALS = 8  # plugins keep USD as integer 1e-8 dollars: exact sums in SQL, never a float


async def usd_units(gateway: "Gateway", coin: str, units: int) -> int:
    """``units`` of ``coin`` valued in USD now (the price service's price, cached up to a minute),
    as an int of 1e-8 dollars rounded half-even; 0 when the price is unknown. Format it with
    ``orbchain.core.money.format_units(value, USD_DECIMALS)``."""
    service = gateway.services.get("prices")
    if service is None or not units:
        return 0
    price = await service.price(coin)
    value = (Decimal(price) * units).scaleb(USD_DECIMALS - gateway.coins.require(coin).decimals)
    return int(value.to_integral_value(rounding=ROUND_HALF_EVEN))


async def api_key_exists(gateway: "Gateway", merchant_id: str, key_id: str) -> bool:
    """Whether ``key_id`` names an API key of this merchant (revoked and expired keys included)."""
    return await gateway.db.fetch_val(
        "SELECT 1 FROM api_keys WHERE id = :id AND merchant_id = :m", {"id": key_id, "m": merchant_id}) is not None


async def merchant_by_account_id(gateway: "Gateway", account_id: str) -> MerchantRecord | None:
    """The merchant behind a public account id (SPEC 2.12), or None: for public pages keyed by it."""
    row = await accounts.find_by_account_id(gateway.db, account_id)
    return None if row is None else _merchant_record(row)


# -- payments for feature plugins (payment links, tips) -----------------------------------------


def receivable_coins(gateway: "Gateway", merchant: MerchantRecord) -> tuple[str, ...]:
    """The merchant's accepted coins that a payer can pay here now (a chain serves them), in its order."""
    return tuple(payments.servable_coins(gateway, {"accepted_coins": list(merchant.accepted_coins)}))


def check_receivable(gateway: "Gateway", merchant: MerchantRecord, coin: str, field: str = "coin") -> None:
    """Refuse a coin a payment of this merchant could not be made in, with the payment API's errors.

    400 validation naming ``field`` (unknown coin), 400 ``<coin>_receive_unsupported``
    (a source-only coin), 400 ``currency_not_accepted``, 503 when no chain here serves it.
    """
    payments.receivable_coin(gateway, {"accepted_coins": list(merchant.accepted_coins)}, coin, field)


async def referred_merchants(gateway: "Gateway", referrer_id: str) -> list[MerchantRecord]:
    """Every merchant that signed up with ``referrer_id`` as its referrer, disabled ones included,
    oldest first."""
    rows = await gateway.db.fetch_all(
        "SELECT * FROM merchants WHERE referrer_id = :r ORDER BY created_at, id", {"r": referrer_id})
    return [_merchant_record(row) for row in rows]


async def reversed_references(gateway: "Gateway", references: Iterable[str]) -> set[str]:
    """Which of these ledger references name a transaction that has since been reversed
    (a credited deposit that left the chain)."""
    wanted = sorted(set(references))
    found: set[str] = set()
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        names = {f"r{i}": ref for i, ref in enumerate(chunk)}
        rows = await gateway.db.fetch_all(
            "SELECT t.reference FROM ledger_transactions t JOIN ledger_transactions r ON r.reverses = t.id"
            f" WHERE t.reference IN ({', '.join(':' + name for name in names)})", names)
        found.update(row["reference"] for row in rows)
    return found


async def ledger_history(gateway: "Gateway", start: int, end: int, kinds: Iterable[str],
                         page: int = 1000) -> AsyncIterator[dict[str, Any]]:
    """Committed ledger transactions of ``kinds`` created in [start, end) (Unix seconds), oldest
    first, each in the shape ``ledger_posted`` receives: for plugins that keep a derived view
    (analytics, referrals) and must catch up on events a crash kept from them. Read in pages;
    a transaction may be yielded twice when a page boundary splits a second (be idempotent)."""
    kinds = list(kinds)
    while start < end:
        batch = await ledger.transactions_between(gateway.db, start, end, kinds, page)
        for txn in batch:
            yield txn.as_event()
        if len(batch) < page:
            return
        last = batch[-1].created_at
        if last == start:  # a whole page within one second: take the rest of that second at once
            rest = await ledger.transactions_between(gateway.db, start, start + 1, kinds, 1_000_000)
            for txn in rest[page:]:
                yield txn.as_event()
            last += 1
        start = last



class AccountRecord(NamedTuple):
    """A merchant's sign-in identity: the (lower-cased) e-mail and whether the account may sign in."""

    merchant_id: str
    email: str
    enabled: bool


class AccountSession(NamedTuple):
    """A signed-in merchant: a dashboard JWT (24 hours), and for a new account its three
    legacy API keys (header name to plaintext, shown once); ``api_keys`` is None otherwise."""

    merchant_id: str
    email: str
    token: str
    api_keys: Mapping[str, str] | None


async def account_by_email(gateway: "Gateway", email: str) -> AccountRecord | None:
    """The account registered with ``email`` (compared case-insensitively), or None."""
    row = await accounts.find_by_email(gateway.db, email)
    return None if row is None else AccountRecord(row["id"], row["email"], bool(row["enabled"]))


IDENTITY_PROVIDER = "identity_provider"  # the sign-in method a plugin's own authentication is recorded as


async def sign_in_account(gateway: "Gateway", merchant_id: str, *, method: str = IDENTITY_PROVIDER) -> AccountSession:
    """A dashboard session for a merchant a plugin has authenticated itself (an identity provider).

    403 ``merchant_disabled`` for a disabled account, 404 for an unknown one.
    The caller is responsible for having proven who the user is. The
    sign-in is announced (a ``sign_in`` security event, ``method`` in its details).
    """
    row = await accounts.require_merchant(gateway.db, merchant_id)
    if not row["enabled"]:
        raise Forbidden("account disabled", code="merchant_disabled")
    session = AccountSession(row["id"], row["email"], accounts.dashboard_token(gateway, row), None)
    await security_events.announce(gateway, row["id"], security_events.SIGN_IN, {"method": method})
    return session


async def create_account(gateway: "Gateway", email: str, *, method: str = IDENTITY_PROVIDER) -> AccountSession:
    """A new merchant with ``email`` and no password, signed in, with its API keys (shown once).

    Exactly what ``POST /dashboard/auth/signup`` creates, minus the password:
    a password login with this e-mail answers "invalid credentials", so the
    account signs in through the plugin that created it. 409 ``Conflict``
    when the e-mail is already registered. Its first sign-in is announced like ``sign_in_account``'s.
    """
    result = await accounts.sign_up(gateway, email, None)
    await security_events.announce(gateway, result.merchant_id, security_events.SIGN_IN, {"method": method})
    return AccountSession(result.merchant_id, result.email, result.token, dict(result.api_keys))


async def announce_security_event(gateway: "Gateway", merchant_id: str, kind: str,
                                  details: Mapping[str, Any] | None = None, *, alert: bool = False) -> None:
    """Tell every plugin (``security_event_occurred``) that ``kind`` happened to the account, after the commit.

    ``details``: short text values under lower-case names, never a secret
    (a name such as ``password`` or ``token`` raises ``ValueError``). The
    request's client IP, user agent and id are added by the core. ``alert``
    asks the dashboard to show it on the home page until dismissed.
    """
    await security_events.announce(gateway, merchant_id, kind, details, alert=alert)


async def confirm_account_holder(gateway: "Gateway", merchant_id: str, *, password: Any = None,
                                 totp_code: Any = None) -> None:
    """Re-authenticate the account holder before binding something to the account (a chat, a device).

    With 2FA on a fresh TOTP code, else the password: 400 validation naming
    the missing field, 401 wrong (``totp_invalid`` for a code), 429 while the
    account's sign-in (or TOTP) lockout runs (every wrong answer counts),
    403 ``password_not_set`` for a password-less account without 2FA.
    """
    await accounts.confirm_account_holder(gateway, merchant_id, password=password, totp_code=totp_code)


async def revoke_dashboard_token(gateway: "Gateway", token: str) -> bool:
    """End one dashboard JWT (a sign-out) in every process before returning; False for no valid token.

    A token from before tokens carried an id can only be ended with all of
    its merchant's: that is what happens to it.
    """
    return await jwt_revocation.revoke_token(gateway, token)


async def revoke_dashboard_tokens(gateway: "Gateway", merchant_id: str) -> None:
    """End every dashboard and mini-app token of the merchant issued until now (sign out everywhere)."""
    await jwt_revocation.revoke_all_tokens(gateway, merchant_id)


async def dashboard_token_revoked(gateway: "Gateway", claims: Mapping[str, Any]) -> bool:
    """Whether the token with these claims (``auth.decode_dashboard_token``'s) was revoked alone; cached."""
    return await jwt_revocation.is_revoked(gateway, claims)


def payout_destination(gateway: "Gateway", coin: str, destination: str) -> str:
    """``destination`` in canonical form, validated exactly like a payout's address.

    Raises the payout errors: 400 validation (unknown coin), invalid_address or
    burn_address; 503 payouts_not_configured when no chain here sends ``coin``.
    """
    route = payouts.payout_route(gateway, coin)
    return payouts.check_destination(route, destination)


def payout_amount(gateway: "Gateway", coin: str, amount: Any, field: str = "amount") -> int:
    """Base units of ``amount`` checked like a payout's: above 0, no finer than the coin, at
    least its minimum payout; a 400 validation naming ``field`` otherwise."""
    return payouts.payout_units(gateway.coins.require(coin), amount, field)


async def request_payout(gateway: "Gateway", merchant_id: str, *, coin: str, destination: str, amount: int,
                         idempotency_key: str, description: str | None = None,
                         request_id: str | None = None) -> PayoutRecord:
    """Reserve and queue a payout through the standard pipeline (SPEC 4.3), once per key.

    The same checks as ``POST /v1/payout`` (destination, minimum, balance,
    backlog breaker) raise the same errors: 400 insufficient_balance,
    invalid_address, 503 payout_backlog_too_large. ``idempotency_key`` must
    carry the plugin's own namespace (``"sched:..."``); a second call with
    the key returns the first payout with ``replay=True`` and moves nothing.
    ``request_id``: the HTTP request that asked for it, if any (its webhooks carry it, SPEC 6.1).
    """
    namespace = idempotency_key.split(":", 1)[0]
    if ":" not in idempotency_key or not namespace or namespace in _CORE_KEY_NAMESPACES:
        raise ValueError(f"plugin idempotency key needs its own namespace: {idempotency_key!r}")
    route = payouts.payout_route(gateway, coin)
    target = payouts.check_destination(route, destination)
    units = payouts.payout_units(route.coin, route.coin.format(amount))
    request = payouts.PayoutRequest(
        route=route, destination=target, amount=units, description=description, idem_key=idempotency_key,
        request_id=request_id,
        request_hash=payouts.fingerprint(coin=coin, destination=target, amount=units, description=description))
    outcome = await payout_worker.create_and_send(gateway, merchant_id, request)
    row = outcome.row
    return PayoutRecord(row["id"], row["track_id"], row["status"], gateway.db.to_int(row["amount"]), outcome.replay)


async def check_public_form(gateway: "Gateway", form: str, body: Mapping[str, Any], client_ip: str) -> None:
    """Ask every plugin whether an anonymous visitor's ``form`` may go on (hook ``check_public_form``).

    Raises what a plugin raised (403 ``captcha_failed`` from the captcha plugin); returns when all allow.
    Call it before anything is written.
    """
    await call_first(gateway.pm, "check_public_form", gateway=gateway, form=form, body=body, client_ip=client_ip)


async def form_widget(gateway: "Gateway") -> SignInWidget | None:
    """The captcha widget a browser form must show (hook ``decide_sign_in_widget``), or None; a plugin answer
    that is not a ``SignInWidget`` is ignored."""
    widget = await call_first(gateway.pm, "decide_sign_in_widget", gateway=gateway)
    return widget if isinstance(widget, SignInWidget) else None


async def page_branding_for(gateway: "Gateway", merchant_id: str, brand_id: str | None = None,
                            payment: Mapping[str, Any] | None = None) -> PageBranding | None:
    """The branding of a hosted page (the ``decide_page_branding`` hook), or None for the plain page.

    Any page asks this: the core's ``/pay`` page and every plugin page (a
    payment link's prompt, a tip page). Branding is cosmetic, so it never
    breaks a page: a plugin that raises or answers something other than a
    ``PageBranding`` is logged and the page renders unbranded. Apply the
    answer with ``orbchain.web.pages.branded`` (template context and CSP).
    """
    try:
        result = await call_first(gateway.pm, "decide_page_branding", gateway=gateway, merchant_id=merchant_id,
                                  brand_id=brand_id, payment=payment)
    except Exception:
        log.exception("decide_page_branding failed for merchant %s, brand %s", merchant_id, brand_id)
        return None
    if result is not None and not isinstance(result, PageBranding):
        log.error("decide_page_branding returned %s, not a PageBranding; page left unbranded", type(result).__name__)
        return None
    return result


# -- a plugin's own merchant-owned rows (core/plugin_rows.py) -------------------------------------

found = plugin_rows.found
insert_statement = plugin_rows.insert_statement
merchant_row = plugin_rows.merchant_row
merchant_rows = plugin_rows.merchant_rows
merchant_row_count = plugin_rows.merchant_row_count
update_row = plugin_rows.update_row
delete_rows_naming = plugin_rows.delete_rows_naming


# -- per-process caches ---------------------------------------------------------------------------


async def cached(gateway: "Gateway", table: str, name: Any, load: Callable[[], Awaitable[Any]]) -> Any:
    """``load()``'s answer for ``name`` in the plugin's cache ``table``, loaded once per process until invalidated.

    For a plugin's rows that are read on hot paths (every hosted page) and
    change rarely. Entries go when ``cache_changed`` is called (in this
    process, after the change commits) and, on PostgreSQL, when any process
    commits a change to a table with a trigger running the core's
    ``orbchain_auth_changed()`` (docs/plugins.md, "Caching"); at most 30 s
    in any case. The answer is shared: treat it as read-only.
    """
    return await auth_cache.remembered(gateway, "plugin:" + table, name, load)


def cache_changed(gateway: "Gateway") -> None:
    """Empty this process's caches now (after committing a change to cached rows); others hear the trigger."""
    auth_cache.invalidate(gateway)


# -- invoices for feature plugins (payment links, tips, subscriptions) -------------------------------


class InvoiceRecord(NamedTuple):
    """An invoice a plugin created: where the payer pays and what it costs.

    ``pay_amount`` is in base units of ``pay_currency``; ``amount`` is the
    price as a decimal string in ``currency`` (a coin or a fiat code).
    ``amount_fiat``, ``fiat_currency``, ``rate_locked`` and ``rate_locked_at``
    are set for fiat-priced invoices (the rate frozen at creation), None
    otherwise. ``replay`` is True when ``track_id`` already named it.
    """

    track_id: str
    merchant_id: str
    status: str
    payment_url: str
    currency: str
    amount: str
    pay_currency: str
    pay_amount: int | None
    expires_at: int | None
    amount_fiat: str | None
    fiat_currency: str | None
    rate_locked: str | None
    rate_locked_at: int | None
    replay: bool = False


def new_track_id() -> str:
    """A fresh, unguessable track id for :func:`create_invoice` (store it before you call)."""
    return payments.new_track_id()


MAX_TRACK_ID = 64


async def create_invoice(
    gateway: "Gateway", merchant_id: str, *, amount: Decimal, currency: str, coins: Sequence[str] = (),
    track_id: str | None = None, lifetime_minutes: int | None = None, description: str | None = None,
    order_id: str | None = None, email: str | None = None, return_url: str | None = None,
    unpaid_retention_seconds: int | None = None,
    in_transaction: Callable[[PaymentView], Awaitable[None]] | None = None,
) -> InvoiceRecord:
    """Create a hosted invoice (SPEC 4.2 ``POST /v1/payment/invoice``) for a merchant, as its API would.

    ``currency`` is a coin or a fiat code (then the coin amount is priced at
    the live rate and the rate is locked on the invoice); ``coins`` are the
    coins its page offers (empty: every coin the merchant accepts), the first
    being the one the payer starts with. The same checks raise the same errors
    as the API (400 validation or ``currency_not_accepted``, 503 without a
    chain or a rate); a disabled merchant is 403 ``merchant_disabled``.

    ``in_transaction(payment)`` runs inside the transaction that stores the
    invoice: what it writes commits with the invoice, raising rolls it back.

    ``return_url``: where the hosted page sends the payer once Paid (SPEC 4.2).
    ``unpaid_retention_seconds``: for invoices minted for anonymous visitors
    (a link, a tip, an enrolment): left unpaid (Expired or Cancelled, no
    deposit ever), the payment is deleted this long after it expired by the
    core's ``payments.prune_unpaid`` job, and the ``payments_pruning`` hook
    lets plugins drop their rows naming it first. None keeps it forever.

    ``track_id``: a plugin that bills on its own (subscriptions) records
    ``new_track_id()`` in its own table and commits before calling, so a crash
    between the creation and its next write, or two processes racing, never
    mint two payments for one claim: called again with the same id it returns
    the payment already created with ``replay=True``. A ``track_id`` naming
    another merchant's payment raises ``ValueError``. Call outside a
    transaction (the address index is reserved before the payment commits).
    """
    if track_id is not None:
        if not isinstance(track_id, str) or not 0 < len(track_id) <= MAX_TRACK_ID:
            raise ValueError("track_id is a non-empty string of at most 64 characters")
        existing = await _own_invoice(gateway, merchant_id, track_id)
        if existing is not None:
            return existing
    row = await accounts.require_merchant(gateway.db, merchant_id)
    if not row["enabled"]:
        raise Forbidden("this merchant does not accept payments", code="merchant_disabled")
    request = payments.PaymentRequest(
        type=payments.INVOICE, currency=currency, amount=amount, pay_currency=coins[0] if coins else None,
        accepted_coins=list(coins) or None, lifetime=lifetime_minutes, description=description,
        order_id=order_id, email=email, return_url=return_url, in_transaction=in_transaction, track_id=track_id,
        unpaid_retention_seconds=unpaid_retention_seconds)
    try:
        view = await payments.create_payment(gateway, row, request)
    except Exception as exc:
        if track_id is not None and is_unique_violation(exc):  # another process created it meanwhile
            existing = await _own_invoice(gateway, merchant_id, track_id)
            if existing is not None:
                return existing
        raise
    pay_coin = gateway.coins.require(view["pay_currency"])
    pay_amount = None if view["pay_amount"] is None else pay_coin.to_units(view["pay_amount"])
    return InvoiceRecord(
        view["track_id"], merchant_id, view["status"], view["payment_url"], view["currency"], view["amount"],
        view["pay_currency"], pay_amount, view["expires_at"], view.get("amount_fiat"), view.get("fiat_currency"),
        view.get("rate_locked"), view.get("rate_locked_at"))


async def _own_invoice(gateway: "Gateway", merchant_id: str, track_id: str) -> InvoiceRecord | None:
    row = await gateway.db.fetch_one(
        "SELECT track_id, merchant_id, type, status, currency, amount, expires_at, pay_currency, pay_amount,"
        " amount_fiat, fiat_currency, rate_locked, rate_locked_at FROM payments WHERE track_id = :t", {"t": track_id})
    if row is None:
        return None
    if row["merchant_id"] != merchant_id or row["type"] != payments.INVOICE:
        raise ValueError(f"track id {track_id!r} names a payment that is not this merchant's invoice")
    return InvoiceRecord(
        row["track_id"], merchant_id, row["status"], f"{gateway.config.base_url}/pay/{row['track_id']}",
        row["currency"], row["amount"], row["pay_currency"], _int_or_none(gateway, row["pay_amount"]),
        row["expires_at"], row["amount_fiat"], row["fiat_currency"], row["rate_locked"], row["rate_locked_at"],
        replay=True)
# -- standing receive addresses (dashboard receive address, the messaging mini-app) -------------


class ReceiveAddress(NamedTuple):
    """A merchant's standing address for one coin (stable, no TTL; SPEC 4.7 receive-address)."""

    coin: str
    address: str


def has_standing_address(gateway: "Gateway", symbol: str) -> bool:
    """Whether the gateway derives standing addresses for ``symbol`` (its family is derivable here)."""
    coin = gateway.coins.require(symbol)
    return addresses.family_of(gateway, coin, payments.chain_for(gateway, symbol).network).derivable


async def receive_address(gateway: "Gateway", merchant_id: str, symbol: str) -> ReceiveAddress:
    """The merchant's standing address for ``symbol``, derived once and then the same.

    Raises 400 ``missing_coin`` (empty symbol), ``xmr_receive_unsupported``
    (a coin without a receive address; the code names the coin),
    ``coin_not_accepted``; 503 when no chain serves the coin.
    """
    merchant = await accounts.require_merchant(gateway.db, merchant_id)
    symbol = (symbol or "").strip().upper()
    if not symbol:
        raise InvalidRequest("coin is required", code="missing_coin")
    coin = gateway.coins.get(symbol)
    if coin is not None:
        require_receive_address(coin)
    if symbol not in payments.merchant_coins(merchant):
        raise InvalidRequest("coin is not accepted by this account", code="coin_not_accepted")
    coin = payments.receivable_coin(gateway, merchant, symbol, field="coin")
    if not has_standing_address(gateway, symbol):
        raise InvalidRequest(f"{symbol} has no standing receive address", code=receive_unsupported_code(coin))
    return ReceiveAddress(symbol, await standing_address(gateway, merchant, coin))


async def standing_address(gateway: "Gateway", merchant: Mapping[str, Any], coin: "Coin") -> str:
    """The merchant's standing address of ``coin`` (a merchant row): read once derived.

    Deriving the first one is a write that a GET reaches, so it is refused
    in maintenance mode (503, nothing written); one derived before is
    still answered then (docs/decisions.md, "GETs that write").
    """
    network = payments.chain_for(gateway, coin.symbol).network
    found = await addresses.find_standing(gateway, merchant, coin, network)
    if found is None:
        refuse_in_maintenance(gateway)
        found = await addresses.standing_address(gateway, merchant, coin, network)
    return found


async def fresh_receive_address(gateway: "Gateway", merchant_id: str, symbol: str) -> ReceiveAddress:
    """A never-used address of the merchant for ``symbol``, derived and recorded now (watched by the scanner).

    For a plugin that has money sent to the merchant on the payer's behalf
    (a venue's payout of a converted payment): a fresh address, so what
    arrives there is told apart from anything else. 400/503 as
    :func:`receive_address`.
    """
    merchant = await accounts.require_merchant(gateway.db, merchant_id)
    coin = payments.receivable_coin(gateway, merchant, (symbol or "").strip().upper(), field="coin")
    require_receive_address(coin)
    address = await addresses.fresh_address(gateway, merchant, coin, payments.chain_for(gateway, coin.symbol).network)
    return ReceiveAddress(coin.symbol, address)
