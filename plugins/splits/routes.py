"""GET /v1/payment/{track_id}/splits: a payment's splits and where each address share's payout stands."""

from __future__ import annotations

from typing import Any, Mapping

from aiohttp import web

from ...api import Gateway, NotFound, envelope, find_payment, gateway_of, principal_of, requires
from .entries import entries_of

routes = web.RouteTableDef()


def entry_view(row: Mapping[str, Any]) -> dict[str, Any]:
    view: dict[str, Any] = {"bps": int(row["bps"])}
    if row["recipient_merchant_id"]:
        view["recipient_merchant_id"] = row["recipient_merchant_id"]
    else:
        view["recipient_address"] = row["recipient_address"]
    return view


def payout_view(gateway: Gateway, row: Mapping[str, Any]) -> dict[str, Any]:
    coin = gateway.coins.require(row["coin"])
    return {"deposit_id": row["deposit_id"], "position": int(row["position"]), "coin": row["coin"],
            "address": row["address"], "amount": coin.format(gateway.db.to_int(row["amount"])),
            "status": row["status"], "payout_track_id": row["payout_track_id"],
            "failure_reason": row["failure_reason"]}


@routes.get("/v1/payment/{track_id}/splits")
@requires("merchant_key", scope="payment:read")
async def show_splits(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    track_id = request.match_info["track_id"]
    payment = await find_payment(gateway, track_id)
    if payment is None or payment.merchant_id != principal_of(request).merchant_id:
        raise NotFound()
    rows = await gateway.db.fetch_all(
        "SELECT * FROM splits_payouts WHERE track_id = :t ORDER BY created_at, deposit_id, position", {"t": track_id})
    return envelope({"track_id": track_id, "splits": [entry_view(r) for r in await entries_of(gateway, track_id)],
                     "payouts": [payout_view(gateway, r) for r in rows]})
