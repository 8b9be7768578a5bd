"""Payout API (SPEC 4.3): create, batch, read, refund; and the dashboard twins (SPEC 4.7)."""

from __future__ import annotations

from typing import Any, Mapping

from aiohttp import web

from ...core.payouts import service as svc
from ...core.refunds import service as refunds
from ...core.payouts.worker import create_and_send
from ...core.accounts.merchants import check_webhook_url
from ...core.types.errors import ApiError, InvalidRequest, ValidationError
from ...core.gateway import Gateway
from ...core.payments.service import get_payment
from ..auth import Principal, ensure_coin_allowed, principal_of, requires
from ..envelope import data_only, envelope, read_json
from ..keys import REQUEST_ID, gateway_of
from ..validation import IDEMPOTENCY_KEY, Field, idempotency_key, pagination, validate

routes = web.RouteTableDef()

MAX_BATCH_ITEMS = 100
# The longest destination any coin may declare (Coin.max_destination_length); each coin's own limit is checked.
MAX_DESTINATION_FIELD = 4096

PAYOUT_FIELDS = [
    Field("currency", required=True, upper=True, max_len=20),
    Field("address", required=True, max_len=MAX_DESTINATION_FIELD),
    Field("amount", "amount", required=True),
    Field("callback_url", "url", max_len=500),
    Field("description", max_len=500),
    IDEMPOTENCY_KEY,
]
BATCH_ITEM_FIELDS = [
    Field("currency", required=True, upper=True, max_len=20),
    Field("address", required=True, max_len=MAX_DESTINATION_FIELD),
    Field("amount", "amount", required=True),
    Field("external_id", required=True, max_len=128),
]
REFUND_FIELDS = [
    Field("destination", required=True, max_len=128),
    Field("amount", "amount"),
    Field("amount_usd", "amount"),
    Field("description", max_len=500),
    Field("external_id", max_len=128),
]


def _parse_target(gateway: Gateway, principal: Principal, values: Mapping[str, Any]) -> tuple:
    """Coin route, base units and canonical destination of one payout, or an ApiError."""
    ensure_coin_allowed(principal, values["currency"])
    route = svc.payout_route(gateway, values["currency"])
    if len(values["address"]) > route.coin.max_destination_length:
        raise ValidationError({"address": f"must be at most {route.coin.max_destination_length} characters"})
    units = svc.payout_units(route.coin, values["amount"])
    return route, units, svc.check_destination(route, values["address"])


async def create_one(request: web.Request) -> web.Response:
    """POST /v1/payout and POST /dashboard/create-payout."""
    gateway = gateway_of(request)
    principal = principal_of(request)
    values = validate(await read_json(request), PAYOUT_FIELDS)
    key = idempotency_key(request.headers, values["idempotency_key"])
    route, units, destination = _parse_target(gateway, principal, values)
    callback = values["callback_url"]
    if callback:
        callback = await check_webhook_url(gateway, callback, field="callback_url")
    payout = svc.PayoutRequest(
        route=route, destination=destination, amount=units, description=values["description"],
        callback_url=callback, idem_key=svc.namespaced(svc.KEY_NS, key),
        request_hash=svc.fingerprint(coin=route.coin.symbol, destination=destination, amount=units,
                                     description=values["description"], callback_url=callback),
        key_id=principal.key_id, request_id=request[REQUEST_ID], requested_by=principal.requester)
    outcome = await create_and_send(gateway, principal.merchant_id, payout)
    return envelope(svc.created_view(gateway, outcome))


@routes.post("/v1/payout")
@requires("payout_key", scope="payout:create")
async def create_payout(request: web.Request) -> web.Response:
    return await create_one(request)


@routes.get("/v1/payout/{track_id}")
@requires("payout_key", scope="payout:read")
async def get_payout(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    row = await svc.get_payout(gateway, principal_of(request).merchant_id, request.match_info["track_id"])
    return envelope(svc.payout_view(gateway, row))


# -- batch (SPEC 2.11): every item on its own ------------------------------------------------


def _batch_items(body: Mapping[str, Any]) -> list[Any]:
    items = body.get("items")
    if items is None or items == []:
        raise InvalidRequest("batch is empty", code="batch_empty")
    if not isinstance(items, list):
        raise ValidationError({"items": "must be an array"})
    if len(items) > MAX_BATCH_ITEMS:
        raise InvalidRequest(f"batch exceeds max of {MAX_BATCH_ITEMS}", code="batch_too_large")
    seen: set[str] = set()
    for item in items:
        external_id = item.get("external_id") if isinstance(item, dict) else None
        if isinstance(external_id, str) and external_id.strip():
            if external_id.strip() in seen:
                raise InvalidRequest("duplicate external_id within batch", code="duplicate_external_id")
            seen.add(external_id.strip())
    return items


async def _batch_item(request: web.Request, index: int, item: Any, batch_id: str) -> dict[str, Any]:
    gateway = gateway_of(request)
    principal = principal_of(request)
    external_id = item.get("external_id") if isinstance(item, dict) else None
    result = {"index": index, "external_id": external_id.strip() if isinstance(external_id, str) else None,
              "track_id": None, "status": "failed", "error": None}
    try:
        if not isinstance(item, dict):
            raise ValidationError({"item": "must be an object"})
        values = validate(item, BATCH_ITEM_FIELDS)
        route, units, destination = _parse_target(gateway, principal, values)
        payout = svc.PayoutRequest(
            route=route, destination=destination, amount=units,
            idem_key=svc.namespaced(svc.BATCH_NS, values["external_id"]), external_id=values["external_id"],
            request_hash=svc.fingerprint(coin=route.coin.symbol, destination=destination, amount=units),
            key_id=principal.key_id, request_id=request[REQUEST_ID], requested_by=principal.requester,
            batch_id=batch_id)
        outcome = await create_and_send(gateway, principal.merchant_id, payout)
    except ApiError as exc:
        result["error"] = svc.item_error(exc)
        return result
    result.update(track_id=outcome.row["track_id"], status="idempotent" if outcome.replay else "created")
    return result


@routes.post("/v1/payout/batch")
@requires("payout_key", scope="payout:create")
async def create_batch(request: web.Request) -> web.Response:
    items = _batch_items(await read_json(request))
    batch_id = svc.new_batch_id()  # the items a chain can pay together share one transaction (batches.py)
    results = [await _batch_item(request, index, item, batch_id) for index, item in enumerate(items)]
    summary = {"total": len(results)}
    for status in ("created", "idempotent", "failed"):
        summary[status] = sum(1 for r in results if r["status"] == status)
    return data_only({"summary": summary, "results": results})


# -- refunds ------------------------------------------------------------------------------------


@routes.post("/v1/payment/{track_id}/refund")
@requires("payout_key", scope="payout:create")
async def refund_payment(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    principal = principal_of(request)
    values = validate(await read_json(request), REFUND_FIELDS)
    track_id = request.match_info["track_id"]
    payment = await get_payment(gateway, principal.merchant_id, track_id)
    ensure_coin_allowed(principal, payment["pay_currency"])
    outcome = await refunds.refund_payment(gateway, principal.merchant_id, track_id, refunds.RefundRequest(
        destination=values["destination"], amount=values["amount"], amount_usd=values["amount_usd"],
        description=values["description"], external_id=values["external_id"], key_id=principal.key_id,
        request_id=request[REQUEST_ID], requested_by=principal.requester))
    return envelope(refunds.refund_view(gateway, outcome))


# -- dashboard ----------------------------------------------------------------------------------


@routes.post("/dashboard/create-payout")
@requires("jwt", scope="payout:create")
async def dashboard_create_payout(request: web.Request) -> web.Response:
    return await create_one(request)


@routes.get("/dashboard/payouts")
@requires("jwt", scope="payout:read")
async def dashboard_payouts(request: web.Request) -> web.Response:
    limit, offset = pagination(request.query, default_limit=20, max_limit=200)
    return envelope(await svc.list_payouts(gateway_of(request), principal_of(request).merchant_id,
                                           limit=limit, offset=offset))
