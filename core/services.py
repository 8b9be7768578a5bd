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

from typing import TYPE_CHECKING, Any, Iterable, Mapping, NamedTuple

from . import accounts, ledger, payout_worker, payouts
from .deposits import CREDITED
from .errors import Forbidden
from .ledger_accounts import merchant_available
from .payments import OPEN_STATUSES

if TYPE_CHECKING:  # pragma: no cover
    from .gateway import Gateway


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
    return [
        DepositRecord(r["id"], r["merchant_id"], r["chain"], r["coin"], r["address"], r["tx_hash"],
                      int(r["output_index"]), gateway.db.to_int(r["amount"]), r["amount_usd"] or "0", r["status"],
                      int(r["confirmations"]), r["track_id"], int(r["created_at"]),
                      _int_or_none(gateway, r["credited_at"]))
        for r in rows
    ]


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
    """A merchant as a plugin sees it: public account id and accepted coins in the merchant's order."""

    merchant_id: str
    account_id: str
    accepted_coins: tuple[str, ...]


async def merchant_record(gateway: "Gateway", merchant_id: str) -> MerchantRecord:
    """The merchant's account id and accepted coins (404 ``not_found`` for an unknown merchant)."""
    row = await accounts.require_merchant(gateway.db, merchant_id)
    return MerchantRecord(row["id"], row["account_id"], tuple(accounts.accepted_coins(row)))


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


async def sign_in_account(gateway: "Gateway", merchant_id: str) -> AccountSession:
    """A dashboard session for a merchant a plugin has authenticated itself (an identity provider).

    403 ``merchant_disabled`` for a disabled account, 404 for an unknown one.
    The caller is responsible for having proven who the user is.
    """
    row = await accounts.require_merchant(gateway.db, merchant_id)
    if not row["enabled"]:
        raise Forbidden("account disabled", code="merchant_disabled")
    return AccountSession(row["id"], row["email"], accounts.dashboard_token(gateway, row), None)


async def create_account(gateway: "Gateway", email: str) -> AccountSession:
    """A new merchant with ``email`` and no password, signed in, with its API keys (shown once).

    Exactly what ``POST /dashboard/auth/signup`` creates, minus the password:
    a password login with this e-mail answers "invalid credentials", so the
    account signs in through the plugin that created it. 409 ``Conflict``
    when the e-mail is already registered.
    """
    result = await accounts.sign_up(gateway, email, None)
    return AccountSession(result.merchant_id, result.email, result.token, dict(result.api_keys))


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
                         idempotency_key: str, description: str | None = None) -> PayoutRecord:
    """Reserve and queue a payout through the standard pipeline (SPEC 4.3), once per key.

    The same checks as ``POST /v1/payout`` (destination, minimum, balance,
    backlog breaker) raise the same errors: 400 insufficient_balance,
    invalid_address, 503 payout_backlog_too_large. ``idempotency_key`` must
    carry the plugin's own namespace (``"sched:..."``); a second call with
    the key returns the first payout with ``replay=True`` and moves nothing.
    """
    namespace = idempotency_key.split(":", 1)[0]
    if ":" not in idempotency_key or not namespace or namespace in _CORE_KEY_NAMESPACES:
        raise ValueError(f"plugin idempotency key needs its own namespace: {idempotency_key!r}")
    route = payouts.payout_route(gateway, coin)
    target = payouts.check_destination(route, destination)
    units = payouts.payout_units(route.coin, route.coin.format(amount))
    request = payouts.PayoutRequest(
        route=route, destination=target, amount=units, description=description, idem_key=idempotency_key,
        request_hash=payouts.fingerprint(coin=coin, destination=target, amount=units, description=description))
    outcome = await payout_worker.create_and_send(gateway, merchant_id, request)
    row = outcome.row
    return PayoutRecord(row["id"], row["track_id"], row["status"], gateway.db.to_int(row["amount"]), outcome.replay)
