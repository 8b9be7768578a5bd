"""Payments: creating them, pricing them, and showing them (SPEC 2.2, 4.2).

Three types share one record: ``static_address`` (a standing per-user
address, no amount, no expiry), ``white_label`` (a one-time payment the
merchant renders) and ``invoice`` (a hosted page at ``/pay/<track_id>``).
Amounts are base units of ``pay_currency``; fiat-priced payments freeze the
rate at creation (``rate_locked``) so market drift never changes what the
payer owes. What deposits do to a payment is the deposit engine's job
(``core/watching/deposits.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, localcontext
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Sequence

from ..addresses import store as addresses
from . import counts, minimums, receive
from ..accounts import settlement
from .changes import announce_now
from .row_cache import copy as copy_rows, payment_rows
from ..infra.db import KeyedRead
from ..types.errors import Forbidden, InvalidRequest, NotConfigured, NotFound, ServiceUnavailable, ValidationError
from ..types.messages import N_
from ..money.amounts import AmountError
from ..money.prices import FIAT_CURRENCIES, PRICES
from ..types.views import PaymentView, payment_view_of
# Values split to lower floors (issue 44); their names stay importable here.
from ..money.coins import chain_for
from ..types.ids import new_track_id
from ..types.receive import ReceiveTarget
from ..types.records import merchant_coins
from ..types.statuses import (
    CANCELLED,
    EXPIRED as EXPIRED,
    OPEN_STATUSES as OPEN_STATUSES,
    PAID as PAID,
    PAYING as PAYING,
    STATUSES as STATUSES,
    WAITING,
)

from ..contract.gateway import PluginGateway as Gateway

if TYPE_CHECKING:  # pragma: no cover
    from ..money.coins import Coin

STATIC, WHITE_LABEL, INVOICE = "static_address", "white_label", "invoice"
PAYMENT_TYPES = (STATIC, WHITE_LABEL, INVOICE)
DEFAULT_LIFETIME = {WHITE_LABEL: 30, INVOICE: 60}
MAX_LIFETIME_MINUTES = 43200


@dataclass(frozen=True)
class PaymentRequest:
    """Validated input of the three create endpoints (routes build it)."""

    type: str
    currency: str | None = None
    amount: Decimal | None = None
    amount_fiat: Decimal | None = None
    fiat_currency: str | None = None
    pay_currency: str | None = None
    order_id: str | None = None
    description: str | None = None
    callback_url: str | None = None
    user_id: str | None = None
    lifetime: int | None = None
    return_url: str | None = None
    cancel_url: str | None = None
    email: str | None = None
    accepted_coins: Sequence[str] | None = None
    key_id: str | None = None
    # The creating key's brand (SPEC 4.9): the payment is tagged with it.
    brand_id: str | None = None
    # Plugin fields (``register_payment_fields``), already parsed: name -> value.
    extensions: Mapping[str, Any] | None = None
    # The creating key's coin allowlist (empty: no limit). It bounds every coin
    # the payment can be paid in, the hosted page's picker included.
    coin_allowlist: Sequence[str] = ()
    # A plugin's own bookkeeping of the new payment (a payment link's use count),
    # run inside the creating transaction: raising rolls the payment back.
    in_transaction: Callable[[PaymentView], Awaitable[None]] | None = None
    # A track id the caller chose beforehand (``services.create_invoice``): stored
    # first by a plugin, it makes a retried creation find its own payment.
    track_id: str | None = None
    # Minted for an anonymous visitor (a link, a tip, an enrolment): once Expired or
    # Cancelled without a deposit, the payment is deleted this long after its expiry
    # (core/payments/pruning.py). None: kept forever, like every API payment.
    unpaid_retention_seconds: int | None = None


# -- coins and prices ----------------------------------------------------------------------


def servable_coins(gateway: "Gateway", merchant: Mapping[str, Any]) -> list[str]:
    """The merchant's accepted coins that a chain here can receive now, in the merchant's order."""
    return [c for c in merchant_coins(merchant) if _servable(gateway, c)]


def payable_coins(gateway: "Gateway", merchant: Mapping[str, Any]) -> list[str]:
    """The merchant's servable coins that can also leave (the coin pickers of payout schedules and rules)."""
    return [c for c in servable_coins(gateway, merchant) if (coin := gateway.coins.get(c)) is not None and coin.payable]



def receivable_coin(gateway: "Gateway", merchant: Mapping[str, Any], symbol: str, field: str = "currency",
                    one_time: bool = False) -> "Coin":
    """A coin the merchant accepts and a chain here can receive.

    A coin without a standing receive address (``Coin.receive_address``
    False) is refused with 400 ``<symbol>_receive_unsupported``, except
    for a ``one_time`` payment on a chain a plugin serves (a subaddress per
    payment; the plugin must then answer ``decide_receive_target``). A coin
    that settles only via a swap also needs a plugin converting it into
    another coin for this merchant (``core/accounts/settlement.py``).
    """
    coin = gateway.coins.get(symbol)
    if coin is None:
        raise ValidationError({field: f"unknown coin {symbol}"})
    if not coin.receive_address and not (one_time and any(a.serves(symbol) for a in gateway.chains)):
        if not one_time:
            receive.require_receive_address(coin)
        # A one-time payment would be possible, but no chain adapter (no wallet) serves the coin here: say so.
        raise InvalidRequest(f"{symbol} payments need the {coin.chain} plugin's wallet, and none is configured"
                             f" here (see the {coin.chain} plugin's setup)",
                             code=receive.receive_unsupported_code(coin))
    if symbol not in merchant_coins(merchant):
        raise InvalidRequest("currency not accepted by merchant", code="currency_not_accepted")
    if not settlement.settles(gateway, merchant, coin):
        raise InvalidRequest(f"{symbol} is accepted only with a non-{symbol} default_settlement_coin",
                             code=receive.receive_unsupported_code(coin))
    chain_for(gateway, symbol)
    return coin


def _prices(gateway: "Gateway") -> Any:
    service = gateway.services.get(PRICES)
    if service is None:
        raise NotConfigured("no price source is configured")
    return service


async def coin_rate_in(gateway: "Gateway", symbol: str, fiat: str) -> Decimal:
    """Price of one coin in ``fiat``; 503 when unknown (never guess a payer's amount)."""
    service = _prices(gateway)
    rate = await service.coin_price_in(symbol, fiat)
    if rate <= 0:
        reason = service.unpriced_reason(symbol) or service.unpriced_reason(fiat)
        raise ServiceUnavailable(f"no {symbol}/{fiat} rate is available right now" + (f": {reason}" if reason else ""))
    return rate


def units_ceiling(value: Decimal, coin: "Coin", field: str = "amount") -> int:
    """Base units of a computed coin amount, rounded up: the payer never pays short."""
    with localcontext() as ctx:
        ctx.prec = 120
        units = (value * (Decimal(10) ** coin.decimals)).to_integral_value(rounding=ROUND_CEILING)
    if units <= 0:
        raise ValidationError({field: N_("is too small to pay in this coin")})
    if units > coin.max_units:  # a fiat or cross-coin price, bounded like a typed amount (Coin.max_amount)
        raise ValidationError({field: N_("is worth more than %(maximum)s %(symbol)s, the most one payment may be",
                                         maximum=coin.format(coin.max_units), symbol=coin.symbol)})
    return int(units)


def _rate_text(rate: Decimal) -> str:
    return format(rate.normalize(), "f")


async def price_payment(
    gateway: "Gateway", request: PaymentRequest, currency: str, pay_coin: "Coin"
) -> dict[str, Any]:
    """Amount fields of a priced payment: pay_amount in base units plus the fiat lock.

    400 naming the amount's field for a fiat amount finer than its currency's
    minor unit and for a pay amount below the pay coin's smallest payment
    (``minimums.py``).
    """
    now = gateway.now()
    if request.amount_fiat is not None or currency in FIAT_CURRENCIES:
        if request.amount_fiat is not None:
            assert request.fiat_currency is not None, "validated input: fiat_currency comes with amount_fiat"
            fiat, fiat_amount, field = request.fiat_currency, request.amount_fiat, "amount_fiat"
        else:
            assert request.amount is not None, "validated input: amount or amount_fiat is set"
            fiat, fiat_amount, field = currency, request.amount, "amount"
        minimums.check_fiat_amount(fiat_amount, fiat, field)
        rate = await coin_rate_in(gateway, pay_coin.symbol, fiat)
        with localcontext() as ctx:
            ctx.prec = 120
            pay_units = units_ceiling(fiat_amount / rate, pay_coin, field)
        minimums.require_payable(pay_coin, pay_units, field=field, priced_in=fiat, price=rate)
        fields = {"amount_fiat": format(fiat_amount.normalize(), "f"), "fiat_currency": fiat,
                  "rate_locked": _rate_text(rate), "rate_locked_at": now, "pay_amount": pay_units}
        if request.amount_fiat is not None:
            # White-label: ``amount`` is in ``currency`` (a coin) at the same lock.
            coin = gateway.coins.require(currency)
            coin_rate = rate if coin.symbol == pay_coin.symbol else await coin_rate_in(gateway, coin.symbol, fiat)
            with localcontext() as ctx:
                ctx.prec = 120
                fields["amount"] = coin.format(units_ceiling(fiat_amount / coin_rate, coin, field))
        else:
            fields["amount"] = fields["amount_fiat"]
        return fields
    coin = gateway.coins.require(currency)
    try:
        units = coin.to_units(request.amount)
    except AmountError as exc:
        raise ValidationError({"amount": exc.problem}) from None
    pay_units, price = units, Decimal(1)  # price: of one pay coin in the amount's coin
    if pay_coin.symbol != coin.symbol:
        # Coin-to-coin: convert through USD at creation and freeze the result.
        from_usd = await coin_rate_in(gateway, coin.symbol, "USD")
        to_usd = await coin_rate_in(gateway, pay_coin.symbol, "USD")
        with localcontext() as ctx:
            ctx.prec = 120
            pay_units = units_ceiling(Decimal(units).scaleb(-coin.decimals) * from_usd / to_usd, pay_coin)
            price = to_usd / from_usd
    minimums.require_payable(pay_coin, pay_units, field="amount", priced_in=coin, price=price)
    return {"amount": coin.format(units), "pay_amount": pay_units}


# -- creation ---------------------------------------------------------------------------


def _expiry(request: PaymentRequest, now: int) -> tuple[int | None, int | None]:
    if request.type == STATIC:
        return None, None
    minutes = request.lifetime or DEFAULT_LIFETIME[request.type]
    if not 1 <= minutes <= MAX_LIFETIME_MINUTES:
        raise ValidationError({"lifetime": f"must be between 1 and {MAX_LIFETIME_MINUTES} minutes"})
    return minutes, now + minutes * 60


def _invoice_coins(gateway: "Gateway", merchant: Mapping[str, Any], request: PaymentRequest) -> list[str]:
    """Coins the invoice's picker offers: the request's list, else every accepted coin a chain serves."""
    accepted = merchant_coins(merchant)
    wanted = list(request.accepted_coins) if request.accepted_coins else accepted
    bad = [c for c in wanted if c not in accepted]
    if bad:
        raise InvalidRequest("currency not accepted by merchant", code="currency_not_accepted",
                             detail={"accepted_coins": f"not accepted: {', '.join(bad)}"})
    if request.coin_allowlist:
        if request.accepted_coins and any(c not in request.coin_allowlist for c in wanted):
            raise Forbidden("a coin in accepted_coins is not allowed for this API key", code="coin_not_allowed")
        # Stored on the payment: the picker and ?pay_currency= never offer more.
        wanted = [c for c in wanted if c in request.coin_allowlist]
        if not wanted:
            raise Forbidden("none of the merchant's coins is allowed for this API key", code="coin_not_allowed")
    servable = [c for c in wanted if gateway.coins.get(c) and _servable(gateway, c)]
    if not servable:
        raise NotConfigured("none of the accepted coins has a configured chain")
    return servable


def _servable(gateway: "Gateway", symbol: str) -> bool:
    coin = gateway.coins.get(symbol)
    if coin is None or not coin.receive_address:
        return False
    return any(adapter.serves(symbol) for adapter in gateway.chains)


async def receive_target(
    gateway: "Gateway", payment: Mapping[str, Any], coin: "Coin", network: str
) -> "ReceiveTarget | None":
    """A plugin's receive target for the new payment, or None when the core derives the address.

    Asked before the creating transaction (a plugin may call a node). A coin
    of a validate-only family that no plugin answers for is 503: nothing
    here can give the payer somewhere to pay.
    """
    target = await receive.plugin_receive_target(gateway, payment, coin)
    if target is None and not coin.receive_address:
        receive.require_receive_address(coin)  # 400: no plugin gave this payment its own address
    if target is None and not addresses.family_of(gateway, coin, network).derivable:
        raise NotConfigured(f"{coin.symbol} payments are not configured on this deployment")
    return target


def _target_fields(target: "ReceiveTarget") -> dict[str, Any]:
    extra = json.dumps(dict(target.extra), sort_keys=True) if target.extra else None
    return {"address": target.address, "receive_extra": extra}


async def create_payment(gateway: "Gateway", merchant: Mapping[str, Any], request: PaymentRequest) -> dict[str, Any]:
    """Validate, price, allocate an address and store a Waiting payment; returns its view.

    The address and the payment commit together: one write (and one fsync)
    per payment; the address's index comes from a per-process block
    reserved beforehand (core/addresses/store.py).
    """
    now = gateway.now()
    lifetime, expires_at = _expiry(request, now)
    invoice_coins = None
    checked: "Coin | None" = None  # ``currency`` as a coin, when checked receivable
    # A payment with an address of its own (not a standing one) may use a coin with no standing address.
    one_time = request.type != STATIC and not (merchant.get("customer_static_mode") and request.user_id)
    if request.type == INVOICE:
        invoice_coins = _invoice_coins(gateway, merchant, request)
        currency = request.currency or invoice_coins[0]
        if currency not in FIAT_CURRENCIES:
            checked = receivable_coin(gateway, merchant, currency, one_time=one_time)
        pay_symbol = request.pay_currency or (currency if currency not in FIAT_CURRENCIES else invoice_coins[0])
    else:
        assert request.currency is not None, "validated input: static and white-label payments name a currency"
        currency = request.currency
        checked = receivable_coin(gateway, merchant, currency, one_time=one_time)
        pay_symbol = request.pay_currency or currency
    if request.coin_allowlist and pay_symbol not in request.coin_allowlist:
        raise Forbidden(f"coin {pay_symbol} is not allowed for this API key", code="coin_not_allowed")
    if checked is not None and checked.symbol == pay_symbol:
        pay_coin = checked  # the same check with the same answer: once is enough
    else:
        pay_coin = receivable_coin(gateway, merchant, pay_symbol, field="pay_currency", one_time=one_time)
    adapter = chain_for(gateway, pay_coin.symbol)

    if request.type == STATIC:
        existing = await _open_static(gateway, merchant["id"], currency, request.user_id)
        if existing is not None:
            return payment_view(gateway, existing, await payment_deposits(gateway, existing["track_id"]))
        priced: dict[str, Any] = {"amount": None, "pay_amount": None}
    else:
        priced = await price_payment(gateway, request, currency, pay_coin)
    if request.type == STATIC:
        standing_key = request.user_id or addresses.MERCHANT_KEY
    elif merchant.get("customer_static_mode") and request.user_id:
        standing_key = request.user_id
    else:
        standing_key = None  # a fresh address for this payment

    row = {
        "track_id": request.track_id or new_track_id(), "merchant_id": merchant["id"], "type": request.type,
        "status": WAITING,
        "currency": currency, "pay_currency": pay_coin.symbol, "amount": priced.get("amount"),
        "pay_amount": None if priced.get("pay_amount") is None else gateway.db.amount_param(priced["pay_amount"]),
        "address": None, "chain": adapter.name, "order_id": request.order_id, "description": request.description,
        "callback_url": request.callback_url, "user_id": request.user_id, "return_url": request.return_url,
        "cancel_url": request.cancel_url, "email": request.email,
        "accepted_coins": json.dumps(invoice_coins) if invoice_coins is not None else None,
        "amount_fiat": priced.get("amount_fiat"), "fiat_currency": priced.get("fiat_currency"),
        "rate_locked": priced.get("rate_locked"), "rate_locked_at": priced.get("rate_locked_at"),
        "lifetime_minutes": lifetime, "key_id": request.key_id, "brand_id": request.brand_id,
        "expires_at": expires_at,
        "created_at": now, "updated_at": now, "receive_extra": None,
    }
    if request.unpaid_retention_seconds is not None and expires_at is not None:
        row["prune_after"] = expires_at + request.unpaid_retention_seconds
    target = await receive_target(gateway, {**row, "pay_amount": priced.get("pay_amount")}, pay_coin, adapter.network)
    # The address index is taken before the transaction (addresses.py): no
    # counter lock is held while the payment commits.
    standing = fresh = None
    if target is None and standing_key is not None:
        standing = await addresses.prepare_standing(gateway, merchant, pay_coin, adapter.network, standing_key)
    elif target is None:
        fresh = await addresses.reserve_fresh(gateway, merchant, pay_coin, adapter.network)
    writes = []
    if target is not None:
        row.update(_target_fields(target))
        if target.watch_index is not None and target.address:
            writes.append(addresses.watched_insert(gateway, merchant, pay_coin, adapter.network, target.address,
                                                   target.watch_index))
    elif fresh is not None:
        row["address"] = fresh.address
        writes.append(addresses.fresh_insert(gateway, merchant, fresh))
    if standing is None and not request.extensions and request.in_transaction is None:
        # Independent inserts: one statement (one round trip, one commit) on PostgreSQL.
        await gateway.db.execute_atomic([*writes, _payment_insert(row)])
    else:
        async with gateway.db.transaction():
            if standing is not None:
                row["address"] = await addresses.settle_standing(gateway, merchant, pay_coin, standing)
            await gateway.db.execute_atomic([*writes, _payment_insert(row)])
            await _store_extensions(gateway, {**row, "paid_at": None}, request.extensions or {})
            if request.in_transaction is not None:
                await request.in_transaction(payment_view_of(gateway, {**row, "paid_at": None}))
    return payment_view(gateway, {**row, "paid_at": None}, [])


def _payment_insert(row: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    return _insert_sql(tuple(row)), row


@lru_cache(maxsize=64)
def _insert_sql(columns: tuple[str, ...]) -> str:
    """The INSERT for these columns, built once: the same SQL text object each create (cached hashes)."""
    return f"INSERT INTO payments ({', '.join(columns)}) VALUES ({', '.join(':' + k for k in columns)})"


async def _store_extensions(gateway: "Gateway", row: Mapping[str, Any], extensions: Mapping[str, Any]) -> None:
    """Plugins store their fields of a new payment inside its creating transaction."""
    if not extensions:
        return
    view = payment_view_of(gateway, row)
    for name, value in extensions.items():
        await gateway.payment_fields[name].store(gateway, view, value)


async def _open_static(gateway: "Gateway", merchant_id: str, currency: str,
                       user_id: str | None) -> Mapping[str, Any] | None:
    """The same (user_id, currency) keeps its open static payment (and address)."""
    user_clause = "user_id = :u" if user_id else "user_id IS NULL"
    values = {"m": merchant_id, "c": currency, "t": STATIC}
    if user_id:
        values["u"] = user_id
    return await gateway.db.fetch_one(
        f"SELECT * FROM payments WHERE merchant_id = :m AND type = :t AND currency = :c AND {user_clause}"
        " AND status IN ('Waiting', 'Paying') ORDER BY created_at DESC LIMIT 1",
        values,
    )


# -- reads ----------------------------------------------------------------------------------


async def get_payment(gateway: "Gateway", merchant_id: str | None, track_id: str) -> Mapping[str, Any]:
    """One payment; another merchant's (or an unknown) id is 404 alike."""
    row = await gateway.db.fetch_one("SELECT * FROM payments WHERE track_id = :t", {"t": track_id})
    if row is None or (merchant_id is not None and row["merchant_id"] != merchant_id):
        raise NotFound()
    return row


async def payment_deposits(gateway: "Gateway", track_id: str) -> list[Mapping[str, Any]]:
    return await gateway.db.fetch_all(
        "SELECT * FROM deposits WHERE track_id = :t ORDER BY created_at, id", {"t": track_id}
    )


def transaction_view(gateway: "Gateway", deposit: Mapping[str, Any]) -> dict[str, Any]:
    """SPEC 2.3: a deposit as shown inside a payment and its webhooks."""
    coin = gateway.coins.require(deposit["coin"])
    return {
        "tx_hash": deposit["tx_hash"],
        "coin": deposit["coin"],
        "amount": coin.format(gateway.db.to_int(deposit["amount"])),
        "amount_usd": deposit["amount_usd"] or "0",
        "status": deposit["status"],
        "confirmations": int(deposit["confirmations"]),
    }


def _column(row: Mapping[str, Any], name: str) -> Any:
    try:
        return row[name]
    except KeyError:  # a row built before the column existed (tests, old callers)
        return None


def payment_view(gateway: "Gateway", row: Mapping[str, Any], deposits: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """SPEC 2.2: the payment record as the API shows it."""
    pay_coin = gateway.coins.require(row["pay_currency"])
    pay_amount = row["pay_amount"]
    view: dict[str, Any] = {
        "track_id": row["track_id"],
        "type": row["type"],
        "status": row["status"],
        "amount": row["amount"],
        "currency": row["currency"],
        "pay_currency": row["pay_currency"],
        "pay_amount": None if pay_amount is None else pay_coin.format(gateway.db.to_int(pay_amount)),
        "address": row["address"],
        "network": pay_coin.chain,
        "order_id": row["order_id"],
        "description": row["description"],
        "user_id": row["user_id"],
        "callback_url": row["callback_url"],
        "expires_at": row["expires_at"],
        "created_at": row["created_at"],
        "paid_at": row["paid_at"],  # null until Paid, as in GET /v1/payment and the webhook
        "transactions": [transaction_view(gateway, d) for d in deposits],
    }
    if row["type"] == INVOICE:
        view["payment_url"] = f"{gateway.config.base_url}/pay/{row['track_id']}"
        view["return_url"] = row["return_url"]
        view["cancel_url"] = row["cancel_url"]
        view["email"] = row["email"]
        view["accepted_coins"] = json.loads(row["accepted_coins"]) if row["accepted_coins"] else []
    brand_id = _column(row, "brand_id")
    if brand_id:
        view["brand_id"] = brand_id
    extra = _column(row, "receive_extra")
    if extra:
        view.update({k: v for k, v in json.loads(extra).items() if k not in view})
    if row["fiat_currency"]:
        view.update({
            "amount_fiat": row["amount_fiat"],
            "fiat_currency": row["fiat_currency"],
            "rate_locked": row["rate_locked"],
            "rate_locked_at": row["rate_locked_at"],
        })
    return view


_PAYMENT_SELECT = ("SELECT p.*, EXISTS (SELECT 1 FROM deposits d WHERE d.track_id = p.track_id) AS has_deposits"
                   " FROM payments p WHERE p.track_id")
_PAYMENT_READ = KeyedRead(one=_PAYMENT_SELECT + " = :key", many=_PAYMENT_SELECT + " = ANY(:keys)", column="track_id")


async def payment_with_deposits(gateway: "Gateway", merchant_id: str | None,
                                track_id: str) -> tuple[dict[str, Any], list[Mapping[str, Any]]]:
    """One payment's row and its deposits: one query, a second only when it has deposits to list; none when
    this process holds them unchanged (core/payments/row_cache.py)."""
    # Inside a transaction the rows may be its own uncommitted ones: neither served from nor kept in the cache.
    cache = None if gateway.db.in_transaction else payment_rows(gateway)
    cached = cache.get(track_id) if cache is not None else None
    if cached is None:
        generation = cache.generation if cache is not None else 0
        found = await gateway.db.fetch_keyed(_PAYMENT_READ, track_id)
        if found is None or (merchant_id is not None and found["merchant_id"] != merchant_id):
            raise NotFound()
        row = dict(found)
        has_deposits = row.pop("has_deposits")
        cached = row, await payment_deposits(gateway, track_id) if has_deposits else []
        if cache is not None:
            cache.put(track_id, cached, generation)
    if merchant_id is not None and cached[0]["merchant_id"] != merchant_id:
        raise NotFound()
    return copy_rows(cached)


async def show_payment(gateway: "Gateway", merchant_id: str | None, track_id: str) -> dict[str, Any]:
    """The API's view of one payment (``payment_with_deposits``)."""
    row, deposits = await payment_with_deposits(gateway, merchant_id, track_id)
    return payment_view(gateway, row, deposits)


def summary_view(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row of ``GET /v1/payment``."""
    return {key: row[key] for key in ("track_id", "type", "status", "currency", "address", "paid_at", "created_at")}


async def list_payments(
    gateway: "Gateway", merchant_id: str, *, status: str | None = None, type: str | None = None,
    order_id: str | None = None, currency: str | None = None, limit: int = 20, offset: int = 0,
    sort_order: str = "desc", full: bool = False,
) -> dict[str, Any]:
    """``GET /v1/payment``'s page: summary rows (SPEC 4.2), or with ``full`` each payment's whole view
    without its transactions (amounts, fiat price, order id, description: what a merchant's list shows).

    The exact ``total`` comes from the counts the database keeps per (status, type, currency)
    (core/payments/counts.py): a few rows, however many payments the merchant has. With ``order_id``
    it is ``COUNT(*)`` over the ``(merchant_id, order_id)`` index, a handful of rows."""
    clauses, values = ["merchant_id = :m"], {"m": merchant_id}
    for column, value in (("status", status), ("type", type), ("order_id", order_id), ("currency", currency)):
        if value is not None:
            clauses.append(f"{column} = :{column}")
            values[column] = value
    where = " AND ".join(clauses)
    direction = "ASC" if sort_order == "asc" else "DESC"
    if order_id is None:
        total = await counts.total(gateway.db, merchant_id, status=status, type=type, currency=currency)
    else:
        total = await gateway.db.fetch_val(f"SELECT COUNT(*) FROM payments WHERE {where}", values)
    # The offset is walked over the list index's own columns (payments_merchant_list: an index-only scan),
    # and only the page's rows are read from the table; SELECT * skipped past every row it did not show
    # (docs/decisions.md, "deep offsets").
    rows = await gateway.db.fetch_all(
        f"SELECT p.* FROM (SELECT track_id, created_at FROM payments WHERE {where}"
        f" ORDER BY created_at {direction}, track_id {direction} LIMIT :limit OFFSET :offset) page"
        f" JOIN payments p ON p.track_id = page.track_id"
        f" ORDER BY page.created_at {direction}, page.track_id {direction}",
        {**values, "limit": limit, "offset": offset},
    )
    views = [payment_view(gateway, r, ()) for r in rows] if full else [summary_view(r) for r in rows]
    return {"payments": views, "total": int(total), "limit": limit, "offset": offset}


# -- changes by the merchant or the payer ---------------------------------------------------------


async def cancel_payment(gateway: "Gateway", merchant_id: str, track_id: str) -> Mapping[str, Any]:
    """Waiting -> Cancelled. A payment with money on the way (Paying) cannot be cancelled."""
    async with gateway.db.transaction():
        row = await gateway.db.fetch_one(
            f"SELECT * FROM payments WHERE track_id = :t{gateway.db.for_update}", {"t": track_id}
        )
        if row is None or row["merchant_id"] != merchant_id:
            raise NotFound()
        if row["status"] == CANCELLED:
            return row
        if row["status"] != WAITING:
            raise InvalidRequest(f"a {row['status']} payment cannot be cancelled", code="payment_not_cancellable")
        await gateway.db.execute(
            "UPDATE payments SET status = :s, updated_at = :now WHERE track_id = :t",
            {"s": CANCELLED, "now": gateway.now(), "t": track_id},
        )
    announce_now(gateway, track_id)
    cancelled = await get_payment(gateway, merchant_id, track_id)
    await gateway.hooks.payment_cancelled(payment=payment_view_of(gateway, cancelled))
    return cancelled


async def change_pay_currency(gateway: "Gateway", track_id: str, symbol: str) -> bool:
    """The hosted page's coin picker: re-price a Waiting invoice in another coin.

    Returns False (and changes nothing) for anything not allowed: the page
    silently ignores invalid choices (SPEC 4.14).
    """
    row = await gateway.db.fetch_one("SELECT * FROM payments WHERE track_id = :t", {"t": track_id})
    if row is None or row["type"] != INVOICE or row["status"] != WAITING or row["pay_currency"] == symbol:
        return False
    if row["expires_at"] is not None and row["expires_at"] <= gateway.now():
        return False
    offered = json.loads(row["accepted_coins"]) if row["accepted_coins"] else []
    if symbol not in offered or not _servable(gateway, symbol):
        return False
    merchant = await gateway.db.fetch_one("SELECT * FROM merchants WHERE id = :m", {"m": row["merchant_id"]})
    assert merchant is not None, "a payment's merchant is never deleted"
    try:
        pay_coin = receivable_coin(gateway, merchant, symbol)
        request = PaymentRequest(type=INVOICE, amount=Decimal(row["amount_fiat"] or row["amount"]))
        priced = await price_payment(gateway, request, row["fiat_currency"] or row["currency"], pay_coin)
    except (InvalidRequest, ValidationError, ServiceUnavailable):
        return False
    adapter = chain_for(gateway, symbol)
    switched = {**row, "pay_currency": symbol, "pay_amount": priced["pay_amount"], "chain": adapter.name}
    try:
        target = await receive_target(gateway, switched, pay_coin, adapter.network)
    except NotConfigured:
        return False
    fresh = None if target is not None else await addresses.reserve_fresh(gateway, merchant, pay_coin, adapter.network)
    async with gateway.db.transaction():
        current = await gateway.db.fetch_one(
            f"SELECT status, pay_currency FROM payments WHERE track_id = :t{gateway.db.for_update}", {"t": track_id}
        )
        seen = await gateway.db.fetch_val("SELECT COUNT(*) FROM deposits WHERE track_id = :t", {"t": track_id})
        assert current is not None, "the payment was read above and payments are never deleted"
        if current["status"] != WAITING or seen:
            return False
        if target is not None:
            fields = _target_fields(target)
        else:
            assert fresh is not None
            fields = {"address": await addresses.store_fresh(gateway, merchant, fresh), "receive_extra": None}
        await gateway.db.execute(
            "UPDATE payments SET pay_currency = :c, pay_amount = :p, address = :a, chain = :ch,"
            " rate_locked = :r, rate_locked_at = :ra, receive_extra = :x, updated_at = :now WHERE track_id = :t",
            {"c": symbol, "p": gateway.db.amount_param(priced["pay_amount"]), "a": fields["address"],
             "ch": adapter.name, "r": priced.get("rate_locked"), "ra": priced.get("rate_locked_at"),
             "x": fields["receive_extra"], "now": gateway.now(), "t": track_id},
        )
    announce_now(gateway, track_id)
    return True

