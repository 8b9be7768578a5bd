"""GET and PUT /dashboard/settings/auto-withdraw (SPEC 4.8): the merchant's rules, replaced as a whole."""

from __future__ import annotations

from typing import Any, Mapping

from aiohttp import web

from ...api import (
    Field, Gateway, ValidationError, envelope, gateway_of, payout_amount, payout_destination, principal_of, read_json,
    requires, validate,
)
from . import store

routes = web.RouteTableDef()

MAX_RULES = 20  # SPEC 8
RULE_FIELDS = [
    Field("coin", required=True, upper=True, max_len=20),
    Field("threshold_native", "amount", required=True),
    Field("destination", required=True, min_len=8, max_len=200),  # SPEC 8: 8-200
]


def rule_view(gateway: Gateway, row: Mapping[str, Any]) -> dict[str, Any]:
    coin = gateway.coins.get(row["coin"])
    units = gateway.db.to_int(row["threshold"])
    return {"coin": row["coin"], "threshold_native": coin.format(units) if coin is not None else str(units),
            "destination": row["destination"], "last_fired_at": row["last_fired_at"],
            "last_error": row["last_error"]}


def parse_rule(gateway: Gateway, index: int, raw: Any) -> tuple[str, int, str]:
    """(coin, threshold in base units, canonical destination) of ``rules[index]``, or a 400."""
    if not isinstance(raw, dict):
        raise ValidationError({f"rules[{index}]": "must be an object"})
    try:
        clean = validate(raw, RULE_FIELDS)
    except ValidationError as exc:
        raise ValidationError({f"rules[{index}].{k}": v for k, v in (exc.detail or {}).items()}) from None
    coin = gateway.coins.get(clean["coin"])
    if coin is None or not coin.payable:
        raise ValidationError({f"rules[{index}].coin": f"unknown or unpayable coin {clean['coin']}"})
    threshold = payout_amount(gateway, coin.symbol, clean["threshold_native"],
                              f"rules[{index}].threshold_native")
    return coin.symbol, threshold, payout_destination(gateway, coin.symbol, clean["destination"])


@routes.get("/dashboard/settings/auto-withdraw")
@requires("jwt")
async def get_rules(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    rows = await store.rules_of(gateway, principal_of(request).merchant_id)
    return envelope({"rules": [rule_view(gateway, row) for row in rows]})


@routes.put("/dashboard/settings/auto-withdraw")
@requires("jwt", scope="payout:create")
async def put_rules(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    await replace_rules(gateway, merchant_id, (await read_json(request)).get("rules"))
    rows = await store.rules_of(gateway, merchant_id)
    return envelope({"rules": [rule_view(gateway, row) for row in rows]})


async def replace_rules(gateway: Gateway, merchant_id: str, raw: Any) -> None:
    """Check every rule, then replace the merchant's rules at once (the API's PUT and the dashboard page)."""
    if not isinstance(raw, list):
        raise ValidationError({"rules": "must be an array"})
    if len(raw) > MAX_RULES:
        raise ValidationError({"rules": f"must have at most {MAX_RULES} items"})
    rules = [parse_rule(gateway, i, item) for i, item in enumerate(raw)]
    coins = [coin for coin, _, _ in rules]
    if len(set(coins)) != len(coins):
        raise ValidationError({"rules": "one rule per coin (the cooldown is per coin)"})
    await store.replace(gateway, merchant_id, rules)
