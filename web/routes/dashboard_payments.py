"""Dashboard twins of the payment API (SPEC 4.7), authenticated by JWT."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from aiohttp import web

from ...core.payments import service as svc
from ...core.payouts import service as payout_svc
from ...core.receiving import address_services
from ...core.watching import deposit_services
from ...core.accounts.merchants import require_merchant
from ...core.types.errors import ValidationError
from ...core.pages.qr import qr_data_uri
from ..auth import principal_of, requires
from ..envelope import envelope, read_json
from ..payment_answer import payment_answer
from ..keys import gateway_of
from ..validation import Field, pagination, validate
from .payments import balances_of, create_from, list_for

if TYPE_CHECKING:  # pragma: no cover
    from ...core.gateway import Gateway

routes = web.RouteTableDef()


@routes.get("/dashboard/payments")
@requires("jwt", scope="payment:read")
async def dashboard_payments(request: web.Request) -> web.Response:
    return await list_for(request, principal_of(request).merchant_id)


@routes.get("/dashboard/payments/{track_id}")
@requires("jwt", scope="payment:read")
async def dashboard_payment(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    return await payment_answer(gateway, principal_of(request).merchant_id, request.match_info["track_id"])


@routes.post("/dashboard/payments/{track_id}/cancel")
@requires("jwt", scope="payment:create")
async def dashboard_cancel(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    merchant_id = principal_of(request).merchant_id
    await svc.cancel_payment(gateway, merchant_id, request.match_info["track_id"])
    return await payment_answer(gateway, merchant_id, request.match_info["track_id"])


@routes.post("/dashboard/create-payment")
@requires("jwt", scope="payment:create")
async def dashboard_create_payment(request: web.Request) -> web.Response:
    body = await read_json(request)
    payment_type = validate(body, [Field("type", required=True, choices=svc.PAYMENT_TYPES)])["type"]
    if payment_type in (svc.STATIC, svc.WHITE_LABEL) and not body.get("currency"):
        raise ValidationError({"currency": "is required"})
    if payment_type in (svc.WHITE_LABEL, svc.INVOICE) and body.get("amount") in (None, ""):
        raise ValidationError({"amount": "is required"})
    return await create_from(request, body, payment_type)


@routes.get("/dashboard/balances")
@requires("jwt", scope="balance:read")
async def dashboard_balances(request: web.Request) -> web.Response:
    return envelope({"balances": await balances_of(gateway_of(request), principal_of(request).merchant_id)})


@routes.get("/dashboard/transactions")
@requires("jwt", scope="balance:read")
async def dashboard_transactions(request: web.Request) -> web.Response:
    """Newest deposits and payouts, ``limit`` applied to each list separately."""
    gateway = gateway_of(request)
    limit, _ = pagination(request.query, default_limit=100, max_limit=500)
    merchant_id = principal_of(request).merchant_id
    deposits = [
        {"id": d.id, "coin": d.coin, "amount": gateway.coins.require(d.coin).format(d.amount),
         "amountUsd": d.amount_usd, "status": d.status, "confirmations": d.confirmations}
        for d in await deposit_services.recent_deposits(gateway, merchant_id, limit)
    ]
    payouts = await payout_svc.recent_payouts(gateway, merchant_id, limit)
    return envelope({"deposits": deposits, "payouts": payouts})


def _standing_coins(gateway: "Gateway", merchant: Mapping[str, Any]) -> list[str]:
    return [c for c in svc.servable_coins(gateway, merchant) if address_services.has_standing_address(gateway, c)]


@routes.get("/dashboard/deposit-addresses")
@requires("jwt", scope="payment:read")
async def deposit_addresses(request: web.Request) -> web.Response:
    """The merchant's own standing address per accepted coin, with QR codes.

    Deriving a missing one writes: in maintenance mode the list answers only
    when every address was derived before, else 503 (nothing written).
    """
    gateway = gateway_of(request)
    merchant = await require_merchant(gateway.db, principal_of(request).merchant_id)
    rows = []
    for symbol in _standing_coins(gateway, merchant):
        address = await address_services.standing_address(gateway, merchant, gateway.coins.require(symbol))
        rows.append({"coin": symbol, "address": address, "qr": await qr_data_uri(gateway.cpu, address)})
    return envelope({"account_id": merchant["account_id"], "addresses": rows})


@routes.get("/dashboard/receive-address")
@requires("jwt", scope="payment:read")
async def receive_address(request: web.Request) -> web.Response:
    """The standing address of ``?coin=``; in maintenance mode one derived before, else 503 (deriving writes)."""
    gateway = gateway_of(request)
    found = await address_services.receive_address(gateway, principal_of(request).merchant_id,
                                                   request.query.get("coin") or "")
    return envelope({"coin": found.coin, "address": found.address})
