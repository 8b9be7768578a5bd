"""Merchant payment API (SPEC 4.2): create, read, list, cancel; deposits; balance."""

from __future__ import annotations

import math
from typing import Any, Mapping

from aiohttp import web

from ...core.watching import deposits as deposit_engine
from ...core.ledger import book as ledger
from ...core.payments import service as svc
from ...core.accounts.merchants import check_webhook_url, merchant_for_payments, require_merchant
from ...core.types.errors import InvalidRequest, NotConfigured, ValidationError
from ...core.gateway import Gateway
from ...core.money.prices import FIAT_CURRENCIES
from ...core.payments.receipts import issue_receipt
from ..auth import Principal, ensure_coin_allowed, principal_of, requires
from ..envelope import envelope, read_json
from ..payment_answer import payment_answer
from ..keys import gateway_of
from ..openapi.paths_payments import WHITE_LABEL_BODY
from ..validation import MAX_TIMESTAMP, Field, pagination, validate

routes = web.RouteTableDef()

COMMON_FIELDS = [
    Field("order_id", max_len=128),
    Field("description", max_len=500),
    Field("callback_url", "url", max_len=500),
    Field("user_id", max_len=128),
]
LIFETIME = Field("lifetime", "int", minimum=1, maximum=svc.MAX_LIFETIME_MINUTES)


def _coin_field(name: str, required: bool = False) -> Field:
    return Field(name, required=required, upper=True, max_len=20)


# Each create body's fields, built once (not per request).
STATIC_FIELDS = (_coin_field("currency", True), *COMMON_FIELDS)
WHITE_LABEL_FIELDS = (
    _coin_field("currency", True), Field("amount", "amount"), Field("amount_fiat", "amount"),
    Field("fiat_currency", upper=True, choices=FIAT_CURRENCIES), _coin_field("pay_currency"),
    LIFETIME, *COMMON_FIELDS,
)
# White-label fields the API documents (SPEC 4.2) that the core does not parse: plugins serve them
# (``register_payment_fields``), so none is named here. One nobody serves is refused with 503, never dropped.
PLUGIN_FIELDS = tuple(name for name in WHITE_LABEL_BODY["properties"]
                      if name not in {field.name for field in WHITE_LABEL_FIELDS})
INVOICE_FIELDS = (
    Field("amount", "amount", required=True), Field("currency", upper=True, max_len=20),
    LIFETIME, Field("expires_in", "int", minimum=60, maximum=svc.MAX_LIFETIME_MINUTES * 60),
    Field("return_url", "url", max_len=500), Field("cancel_url", "url", max_len=500),
    Field("email", "email", max_len=254, aliases=("customer_email",)),
    Field("accepted_coins", "list", min_len=1, max_len=50, upper=True), _coin_field("pay_currency"),
    *COMMON_FIELDS,
)


async def parse_payment_request(
    gateway: Gateway, body: Mapping[str, Any], payment_type: str, principal: Principal
) -> svc.PaymentRequest:
    """Validate one create body into a ``PaymentRequest`` (shared by /v1 and /dashboard)."""
    if payment_type == svc.STATIC:
        values = validate(body, STATIC_FIELDS)
    elif payment_type == svc.WHITE_LABEL:
        values = validate(body, WHITE_LABEL_FIELDS)
        if (values["amount"] is None) == (values["amount_fiat"] is None):
            raise ValidationError({"amount": "exactly one of amount or amount_fiat is required"})
        if values["amount_fiat"] is not None and not values["fiat_currency"]:
            raise ValidationError({"fiat_currency": "is required with amount_fiat"})
        check_exclusive_fields(gateway, body)
        refuse_unserved_fields(gateway, body)
    else:
        values = validate(body, INVOICE_FIELDS)
        if values["lifetime"] is None and values["expires_in"] is not None:
            values["lifetime"] = math.ceil(values["expires_in"] / 60)
    if values.get("callback_url"):
        values["callback_url"] = await check_webhook_url(gateway, values["callback_url"], field="callback_url")
    for field in ("currency", "pay_currency"):
        symbol = values.get(field)
        if symbol and symbol not in FIAT_CURRENCIES:
            ensure_coin_allowed(principal, symbol)
    extensions = parse_plugin_fields(gateway, body, payment_type, principal.merchant_id)
    for symbol in values.get("accepted_coins") or ():
        ensure_coin_allowed(principal, symbol)
    return svc.PaymentRequest(
        type=payment_type, currency=values.get("currency"), amount=values.get("amount"),
        amount_fiat=values.get("amount_fiat"), fiat_currency=values.get("fiat_currency"),
        pay_currency=values.get("pay_currency"), order_id=values.get("order_id"),
        description=values.get("description"), callback_url=values.get("callback_url"),
        user_id=values.get("user_id"), lifetime=values.get("lifetime"), return_url=values.get("return_url"),
        cancel_url=values.get("cancel_url"), email=values.get("email"),
        accepted_coins=values.get("accepted_coins"), key_id=principal.key_id, brand_id=principal.brand_id,
        extensions=extensions,
        coin_allowlist=principal.coin_allowlist,
    )


def refuse_unserved_fields(gateway: Gateway, body: Mapping[str, Any]) -> None:
    """503 for a documented plugin field sent while no plugin registered it: the caller asked for
    something (a split, a conversion) this deployment would otherwise silently not do."""
    unserved = [name for name in PLUGIN_FIELDS if body.get(name) and name not in gateway.payment_fields]
    if unserved:
        raise NotConfigured(f"{' and '.join(unserved)}: not enabled on this deployment"
                            f" (no plugin serves {'this field' if len(unserved) == 1 else 'these fields'})")


def check_exclusive_fields(gateway: Gateway, body: Mapping[str, Any]) -> None:
    """400 with the plugin's code when a plugin field comes with one it excludes (the splits plugin's
    ``excludes``), before any 503 for a field nobody serves: the combination is wrong anywhere."""
    for payment_field in gateway.payment_fields:
        if body.get(payment_field.name) is None:
            continue
        for other, code in payment_field.excludes.items():
            if body.get(other) is not None:
                raise InvalidRequest(f"{payment_field.name} cannot be combined with {other}", code=code,
                                     detail={payment_field.name: f"cannot be combined with {other}"})


def parse_plugin_fields(gateway: Gateway, body: Mapping[str, Any], payment_type: str,
                        merchant_id: str) -> dict[str, Any]:
    """Fields a plugin handles (``register_payment_fields``): each parsed by its plugin.

    A plugin's ``parse`` raises ``ValidationError`` for a bad value; any
    other failure of a plugin is its bug, not the caller's, and stays a 500.
    """
    extensions: dict[str, Any] = {}
    for payment_field in gateway.payment_fields:
        if body.get(payment_field.name) is not None:
            extensions[payment_field.name] = payment_field.parse(gateway, body[payment_field.name], payment_type,
                                                                 merchant_id)
    return extensions


async def create(request: web.Request, payment_type: str) -> web.Response:
    return await create_from(request, await read_json(request), payment_type)


async def create_from(request: web.Request, body: Mapping[str, Any], payment_type: str) -> web.Response:
    """Validate ``body`` as a ``payment_type`` payment and create it for the caller."""
    gateway = gateway_of(request)
    principal = principal_of(request)
    payment_request = await parse_payment_request(gateway, body, payment_type, principal)
    merchant = await merchant_for_payments(gateway, principal.merchant_id)
    return envelope(await svc.create_payment(gateway, merchant, payment_request))


@routes.post("/v1/payment/static-address")
@requires("merchant_key", scope="payment:create")
async def create_static(request: web.Request) -> web.Response:
    return await create(request, svc.STATIC)


@routes.post("/v1/payment/white-label")
@requires("merchant_key", scope="payment:create")
async def create_white_label(request: web.Request) -> web.Response:
    return await create(request, svc.WHITE_LABEL)


@routes.post("/v1/payment/invoice")
@requires("merchant_key", scope="payment:create")
async def create_invoice(request: web.Request) -> web.Response:
    return await create(request, svc.INVOICE)


@routes.get("/v1/payment/accepted-currencies")
@requires("merchant_key", scope="payment:read")
async def accepted_currencies(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    merchant = await require_merchant(gateway.db, principal_of(request).merchant_id)
    return envelope({"accepted_coins": svc.merchant_coins(merchant)})


LIST_FIELDS = [
    Field("status", upper=True, choices=tuple(s.upper() for s in svc.STATUSES)),
    Field("type", upper=True, choices=tuple(t.upper() for t in svc.PAYMENT_TYPES)),
    Field("order_id", max_len=128),
    Field("currency", upper=True, max_len=20),
    Field("sort_order", choices=("asc", "desc"), default="desc"),
]


async def list_for(request: web.Request, merchant_id: str) -> web.Response:
    gateway = gateway_of(request)
    query = validate(request.query, LIST_FIELDS)
    limit, offset = pagination(request.query, default_limit=20, max_limit=200)
    status = next((s for s in svc.STATUSES if s.upper() == query["status"]), None)
    result = await svc.list_payments(
        gateway, merchant_id, status=status, type=query["type"].lower() if query["type"] else None,
        order_id=query["order_id"], currency=query["currency"], limit=limit, offset=offset,
        sort_order=query["sort_order"],
    )
    return envelope(result)


@routes.get("/v1/payment")
@requires("merchant_key", scope="payment:read")
async def list_payments(request: web.Request) -> web.Response:
    return await list_for(request, principal_of(request).merchant_id)


@routes.get("/v1/payment/{track_id}")
@requires("merchant_key", scope="payment:read")
async def get_payment(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    return await payment_answer(gateway, principal_of(request).merchant_id, request.match_info["track_id"])


@routes.get("/v1/payment/{track_id}/receipt")
@requires("merchant_key", scope="payment:read")
async def payment_receipt(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    payment = await svc.get_payment(gateway, principal_of(request).merchant_id, request.match_info["track_id"])
    return envelope(await issue_receipt(gateway, payment))


@routes.post("/v1/payment/{track_id}/cancel")
@requires("merchant_key", scope="payment:create")
async def cancel_payment(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    merchant_id = principal_of(request).merchant_id
    await svc.cancel_payment(gateway, merchant_id, request.match_info["track_id"])
    return await payment_answer(gateway, merchant_id, request.match_info["track_id"])


DEPOSIT_FIELDS = [
    Field("coin", upper=True, max_len=20),
    Field("status", upper=True, choices=deposit_engine.DEPOSIT_STATUSES),
    Field("address", max_len=128),
    Field("user_id", max_len=128),
    Field("since", "int", minimum=0, maximum=MAX_TIMESTAMP),
    Field("sort_order", choices=("asc", "desc"), default="desc"),
]


@routes.get("/v1/deposits")
@requires("merchant_key", scope="payment:read")
async def list_deposits(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    query = validate(request.query, DEPOSIT_FIELDS)
    limit, offset = pagination(request.query, default_limit=50, max_limit=200)
    return envelope(await deposit_engine.list_deposits(gateway, principal_of(request).merchant_id, limit=limit,
                                                       offset=offset, **query))


async def balances_of(gateway: Gateway, merchant_id: str) -> list[dict[str, str]]:
    """Non-zero available balances as ``[{coin, amount}]`` (SPEC 4.6)."""
    table = await ledger.merchant_balances(gateway.db, merchant_id)
    return [
        {"coin": coin, "amount": gateway.coins.require(coin).format(units) if coin in gateway.coins else str(units)}
        for coin, units in sorted(table.items()) if units
    ]


@routes.get("/v1/general/account/balance")
@requires("general_key", scope="balance:read")
async def account_balance(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    return envelope({"balances": await balances_of(gateway, principal_of(request).merchant_id)})
