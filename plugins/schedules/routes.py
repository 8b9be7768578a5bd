"""POST/GET /dashboard/payout-schedules and PATCH/DELETE /dashboard/payout-schedules/{id} (SPEC 4.11)."""

from __future__ import annotations

from typing import Any, Mapping

from aiohttp import web

from ...api import (
    Field, Gateway, InvalidRequest, ValidationError, envelope, gateway_of, payout_amount, payout_destination,
    principal_of, read_json, requires, validate,
)
from . import store

routes = web.RouteTableDef()

MIN_INTERVAL, MAX_INTERVAL = 3600, 2_592_000  # SPEC 8
MAX_SCHEDULES = 50  # per merchant (docs/decisions.md)
INTERVAL = Field("interval_sec", "int", minimum=MIN_INTERVAL, maximum=MAX_INTERVAL)
MIN_AMOUNT = Field("min_amount", "amount")
FIXED = ("coin", "destination")  # SPEC 4.11: PATCH takes enabled, min_amount, interval_sec


def schedule_view(gateway: Gateway, row: Mapping[str, Any]) -> dict[str, Any]:
    coin = gateway.coins.get(row["coin"])
    units = gateway.db.to_int(row["min_amount"])
    return {
        "id": row["id"], "coin": row["coin"], "destination": row["destination"],
        "min_amount": coin.format(units) if coin is not None else str(units),
        "interval_sec": int(row["interval_sec"]), "enabled": bool(row["enabled"]),
        "last_run_at": row["last_run_at"], "last_error": row["last_error"], "next_run_at": row["next_run_at"],
    }


@routes.post("/dashboard/payout-schedules")
@requires("jwt", scope="payout:create")
async def create(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    return envelope(schedule_view(gateway, await create_schedule(gateway, merchant_id, await read_json(request))))


async def create_schedule(gateway: Gateway, merchant_id: str, body: Mapping[str, Any]) -> Any:
    """Validate a schedule's body and store it (the API route's and the dashboard page's one way)."""
    clean = validate(body, [
        Field("coin", required=True, upper=True, max_len=20), Field("destination", required=True, max_len=128),
        Field("min_amount", "amount", required=True), Field("interval_sec", "int", required=True,
                                                             minimum=MIN_INTERVAL, maximum=MAX_INTERVAL),
    ])
    destination = payout_destination(gateway, clean["coin"], clean["destination"])
    units = payout_amount(gateway, clean["coin"], clean["min_amount"], "min_amount")
    if await store.count(gateway, merchant_id) >= MAX_SCHEDULES:
        raise InvalidRequest(f"at most {MAX_SCHEDULES} payout schedules", code="too_many_schedules")
    row = await store.insert(gateway, merchant_id, coin=clean["coin"], destination=destination, min_amount=units,
                             interval_sec=clean["interval_sec"])
    return row


@routes.get("/dashboard/payout-schedules")
@requires("jwt", scope="payout:read")
async def list_schedules(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    rows = await store.list_for(gateway, principal_of(request).merchant_id)
    return envelope({"schedules": [schedule_view(gateway, row) for row in rows]})


@routes.patch("/dashboard/payout-schedules/{id}")
@requires("jwt", scope="payout:create")
async def patch(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    current = await store.get(gateway, merchant_id, request.match_info["id"])
    body = await read_json(request)
    fixed = {k: "is fixed at creation; delete the schedule and create a new one" for k in FIXED if k in body}
    if fixed:  # a silently ignored destination change would keep paying the old address
        raise ValidationError(fixed)
    clean = validate(body, [Field("enabled", "bool"), MIN_AMOUNT, INTERVAL])
    changes = {k: v for k, v in clean.items() if v is not None}
    if not changes:
        raise ValidationError({"body": "give at least one of enabled, min_amount, interval_sec"})
    if "min_amount" in changes:
        changes["min_amount"] = payout_amount(gateway, current["coin"], changes["min_amount"], "min_amount")
    row = await store.update(gateway, merchant_id, current["id"], changes)
    return envelope(schedule_view(gateway, row))


@routes.delete("/dashboard/payout-schedules/{id}")
@requires("jwt", scope="payout:create")
async def delete(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    await store.delete(gateway, merchant_id, request.match_info["id"])
    return envelope({"id": request.match_info["id"], "deleted": True})
