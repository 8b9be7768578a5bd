"""Core services for payments: a payment's record, the coins a payer can pay in, hosted invoices.

Why its own module: feature plugins that take money (payment links, tips, subscriptions) mint and
read payments only through these, never the payments table.

Records, never rows: plugins reach these through ``orbchain.api`` (docs/plugins.md, "Core services").
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Awaitable, Callable, NamedTuple, Sequence

from ..accounts import merchants as accounts
from ..payments import service as payments
from ..infra.db import is_unique_violation
from ..types.errors import Forbidden, NotConfigured, ServiceUnavailable, ValidationError
from ..types.statuses import OPEN_STATUSES
from ..types.views import PaymentView

from ..contract.gateway import PluginGateway as Gateway

if TYPE_CHECKING:  # pragma: no cover
    from ..accounts.merchant_services import MerchantRecord


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


def receivable_coins(gateway: "Gateway", merchant: MerchantRecord) -> tuple[str, ...]:
    """The merchant's accepted coins that a payer can pay here now (a chain serves them), in its order."""
    return tuple(payments.servable_coins(gateway, {"accepted_coins": list(merchant.accepted_coins)}))


def check_receivable(gateway: "Gateway", merchant: MerchantRecord, coin: str, field: str = "coin") -> None:
    """Refuse a coin a payment of this merchant could not be made in, with the payment API's errors.

    400 validation naming ``field`` (unknown coin), 400 ``<coin>_receive_unsupported``
    (a source-only coin), 400 ``currency_not_accepted``, 503 when no chain here serves it.
    """
    payments.receivable_coin(gateway, {"accepted_coins": list(merchant.accepted_coins)}, coin, field)


async def check_invoice_amount(gateway: "Gateway", amount: Decimal, currency: str, coins: Sequence[str], *,
                               field: str = "amount") -> None:
    """Refuse now what an invoice of ``amount`` ``currency`` (a fiat code or a coin) payable in ``coins`` would be
    refused for when it is minted: 400 validation naming ``field``.

    For what sets a price before any invoice exists (a payment link, a
    plan): more decimals than the currency has, or an amount below the
    smallest payment of one of ``coins`` at the current rate. A coin without
    a rate right now (or with no chain here) is not checked: the mint checks
    again then. Change nothing.
    """
    request = payments.PaymentRequest(type=payments.INVOICE, amount=amount)
    for symbol in coins:
        pay_coin = gateway.coins.get(symbol)
        if pay_coin is None:
            continue
        try:
            await payments.price_payment(gateway, request, currency, pay_coin)
        except (ServiceUnavailable, NotConfigured):
            continue
        except ValidationError as exc:
            # price_payment names one field (amount or amount_fiat): the problem, under the caller's name.
            raise ValidationError({field: next(iter((exc.detail or {"": exc.message}).values()))}) from None


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
    in_transaction: Callable[[PaymentView], Awaitable[None]] | None = None, brand_id: str | None = None,
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

    ``brand_id``: the brand the payment wears (its page's look, its webhook
    destination), as a key's brand tags its payments; the caller checked it
    (``check_key_brand``) when it stored it, e.g. on a payment link.

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
        unpaid_retention_seconds=unpaid_retention_seconds, brand_id=brand_id)
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
