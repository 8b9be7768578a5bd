"""The portfolio plugin documents its route in ``/openapi.json`` (``register_openapi``)."""

from __future__ import annotations

from ...api.openapi import Op, envelope, obj, ref

TAG = "Dashboard: portfolio"
STRING = {"type": "string"}
NULLABLE_USD = {"anyOf": [STRING, {"type": "null"}]}

LINE = obj({
    "coin": STRING, "amount": {"type": "string", "description": "Available balance in coin units."},
    "spot_usd": {**NULLABLE_USD, "description": "Cached USD price; null when none is younger than 10 minutes."},
    "change_24h_pct": {**NULLABLE_USD, "description": "Null when the price source reports no 24 h change."},
    "value_usd": {**NULLABLE_USD, "description": "amount x spot_usd rounded half-up to cents; null with spot_usd."},
    "stale": {"type": "boolean", "description": "True when spot_usd is older than 60 s (at most 10 minutes)."},
})
PORTFOLIO = obj({
    "account_id": STRING,
    "total_usd": {"type": "string", "description": "Sum of the value_usd shown; coins without a price excluded."},
    "per_coin": {"type": "array", "items": ref("PortfolioCoin")},
})

OPERATIONS = [
    Op("GET", "/dashboard/portfolio", "Portfolio in USD", TAG, envelope(obj({"portfolio": ref("Portfolio")})),
       auth=("jwt",),
       description="Every accepted coin, zero balances included, valued with spot prices cached 60 s; "
                   "a price up to 10 minutes old is used and marked stale, an older one is not used."),
]


def register(registry) -> None:
    registry.add_schema("PortfolioCoin", LINE)
    registry.add_schema("Portfolio", PORTFOLIO)
    for op in OPERATIONS:
        registry.add(op)
