"""A held payout or transfer as the API and the page show it: what, who asked, why it is held, until when."""

from __future__ import annotations

from typing import Any, Mapping

from . import people
from .policy import usd_text


async def held_view(gateway: Any, merchant_id: str, row: Mapping[str, Any]) -> dict[str, Any]:
    coin = gateway.coins.require(row["coin"])
    return {"kind": row["kind"], "id": row["ref"], "coin": row["coin"],
            "amount": coin.format(gateway.db.to_int(row["amount"])), "destination": row["destination"],
            "usd": usd_text(gateway.db.to_int(row["usd"])), "reason": row["reason"],
            "requested_by": await people.label(gateway, merchant_id, row["requested_by"], row["key_id"]),
            "requested_by_id": row["requested_by"], "key_id": row["key_id"], "created_at": row["created_at"],
            "expires_at": row["expires_at"]}


def decision_view(hold: Mapping[str, Any]) -> dict[str, Any]:
    return {"kind": hold["kind"], "id": hold["ref"], "state": hold["state"], "decided_at": hold["decided_at"]}
