"""The subscriptions API (SPEC 4.5, merchant key) and its dashboard twins (SPEC 4.10, JWT).

Merchant-key routes answer bare ``{data}`` (SPEC 2.1 names subscriptions
among the data-only responses), list and show subscriptions only (an
enrolment from the customer page joins them, ACTIVE, once its first invoice
is paid: ``store.IS_SUBSCRIPTION``) and need the plugin's scopes when called with
a scoped key: ``subscription:create``, ``subscription:read``,
``subscription:cancel`` (the legacy merchant key has all three). The
dashboard routes answer the full envelope.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Mapping

from aiohttp import web

from ...api import Field, data_only, envelope, gateway_of, pagination, principal_of, read_json, requires, validate
from ...api.merchant import check_key_brand
from . import checkout, enrolment, plans, store

routes = web.RouteTableDef()

SCOPE_CREATE, SCOPE_READ, SCOPE_CANCEL = "subscription:create", "subscription:read", "subscription:cancel"
SCOPES = {
    SCOPE_CREATE: "Create subscriptions (POST /v1/subscription).",
    SCOPE_READ: "Read subscriptions (GET /v1/subscription, /v1/subscription/{id}).",
    SCOPE_CANCEL: "Cancel subscriptions (POST /v1/subscription/{id}/cancel).",
}
# SPEC 4.5: the four statuses of SPEC 3.4; an unpaid page enrolment is not a subscription (store.IS_SUBSCRIPTION).
LIST_FILTERS = [Field("status", upper=True, choices=store.SPEC_STATUSES), Field("customer_ref", max_len=128)]


async def _created(request: web.Request) -> dict[str, Any]:
    gateway = gateway_of(request)
    row = await checkout.enrol(gateway, principal_of(request).merchant_id, await read_json(request))
    return enrolment.subscription_view(gateway, row)


async def _listed(request: web.Request) -> dict[str, Any]:
    gateway = gateway_of(request)
    filters = validate(request.query, LIST_FILTERS)
    limit, offset = pagination(request.query, default_limit=20, max_limit=200)
    rows, total = await store.list_subscriptions(gateway, principal_of(request).merchant_id, limit=limit,
                                                 offset=offset, **filters)
    return {"subscriptions": [enrolment.subscription_view(gateway, r) for r in rows], "total": total,
            "limit": limit, "offset": offset}


# -- merchant key (SPEC 4.5) ---------------------------------------------------------------------------


@routes.post("/v1/subscription")
@requires("merchant_key", scope=SCOPE_CREATE)
async def create(request: web.Request) -> web.Response:
    return data_only(await _created(request))


@routes.get("/v1/subscription")
@requires("merchant_key", scope=SCOPE_READ)
async def list_subscriptions(request: web.Request) -> web.Response:
    return data_only(await _listed(request))


@routes.get("/v1/subscription/{id}")
@requires("merchant_key", scope=SCOPE_READ)
async def show(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    row = await store.subscription_of(gateway, principal_of(request).merchant_id, request.match_info["id"])
    return data_only(enrolment.subscription_view(gateway, row))


@routes.post("/v1/subscription/{id}/cancel")
@requires("merchant_key", scope=SCOPE_CANCEL)
async def cancel(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    current = await store.subscription_of(gateway, merchant_id, request.match_info["id"])
    await enrolment.cancel(gateway, current["id"])
    return data_only(enrolment.subscription_view(gateway, await store.subscription_of(gateway, merchant_id,
                                                                                      current["id"])))


# -- dashboard (SPEC 4.10) -----------------------------------------------------------------------------


@routes.post("/dashboard/subscriptions")
@requires("jwt")
async def dashboard_create(request: web.Request) -> web.Response:
    return envelope(await _created(request))


@routes.get("/dashboard/subscriptions")
@requires("jwt")
async def dashboard_list(request: web.Request) -> web.Response:
    return envelope(await _listed(request))


@routes.get("/dashboard/subscriptions/summary")
@requires("jwt")
async def dashboard_summary(request: web.Request) -> web.Response:
    return envelope(await enrolment.summary(gateway_of(request), principal_of(request).merchant_id))


@routes.post("/dashboard/plans")
@requires("jwt")
async def create_plan(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    return envelope(plans.plan_view(gateway, await new_plan(gateway, merchant_id, await read_json(request))))


async def new_plan(gateway: Any, merchant_id: str, body: Mapping[str, Any]) -> Any:
    """Validate a plan's body and store it (the API route's and the dashboard page's one way)."""
    clean = validate(body, plans.CREATE_FIELDS)
    await plan_brand(gateway, merchant_id, clean["brand_id"])
    coins = await plans.check_coins(gateway, merchant_id, clean["accepted_coins"] or [])
    await plans.check_price(gateway, merchant_id, clean["amount_usd"], coins)
    if await store.count_plans(gateway, merchant_id) >= plans.MAX_PLANS:
        raise plans.too_many()
    row = await store.insert_plan(gateway, merchant_id, label=clean["label"],
                                  amount_usd=plans.usd_text(clean["amount_usd"]),
                                  interval_sec=clean["interval_sec"], accepted_coins=coins,
                                  brand_id=clean["brand_id"] or None)
    return row


async def plan_brand(gateway: Any, merchant_id: str, brand_id: str | None) -> str | None:
    """``brand_id`` when it is a live brand of this account (as a key's, ``decide_key_brand_allowed``); None for
    none (null or "": the default look)."""
    if brand_id:
        await check_key_brand(gateway, merchant_id, brand_id)
    return brand_id or None


@routes.get("/dashboard/plans")
@requires("jwt")
async def list_plans(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    rows = await store.plans_of(gateway, principal_of(request).merchant_id)
    return envelope({"plans": [plans.plan_view(gateway, r) for r in rows]})


@routes.patch("/dashboard/plans/{id}")
@requires("jwt")
async def patch_plan(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    current = await store.plan_of(gateway, merchant_id, request.match_info["id"])
    body = await read_json(request)
    changes = {k: v for k, v in validate(body, plans.PATCH_FIELDS).items() if v is not None}
    if "brand_id" in body:  # null or "" clears it (the default look)
        changes["brand_id"] = await plan_brand(gateway, merchant_id, changes.get("brand_id"))
    if not changes:
        raise plans.nothing_to_change()
    if "accepted_coins" in changes:
        changes["accepted_coins"] = await plans.check_coins(gateway, merchant_id, changes["accepted_coins"])
    if "amount_usd" in changes or "accepted_coins" in changes:  # the price as it will be, in the coins it will offer
        price = changes["amount_usd"] if "amount_usd" in changes else Decimal(current["amount_usd"])
        await plans.check_price(gateway, merchant_id, price, changes.get("accepted_coins", store.coins_of(current)))
    if "amount_usd" in changes:
        changes["amount_usd"] = plans.usd_text(changes["amount_usd"])
    row = await store.update_plan(gateway, merchant_id, current["id"], changes)
    return envelope(plans.plan_view(gateway, row))
