"""The analytics plugin documents its route in ``/openapi.json``."""

from __future__ import annotations

from ...api.openapi import Op, envelope, obj, ref

INTEGER = {"type": "integer"}
USD = {"type": "string", "description": "US dollars, exact decimal, each event valued when it was counted."}
DAY = obj({"date": {"type": "string", "format": "date"}, "deposits_usd": USD, "payouts_usd": USD,
           "deposit_count": INTEGER, "payout_count": INTEGER})
TOTALS = obj({"total_deposits_usd": USD, "total_payouts_usd": USD, "total_deposit_count": INTEGER,
              "total_payout_count": INTEGER})


def register(registry) -> None:
    registry.add_schema("AnalyticsDay", DAY)
    registry.add(Op(
        "GET", "/dashboard/analytics", "Deposits and payouts of the last 30 days", "Dashboard: account",
        envelope(obj({"daily": {"type": "array", "items": ref("AnalyticsDay")}, "totals": TOTALS})), auth=("jwt",),
        description="30 UTC days ending today, oldest first, zero days included. Deposits are credited deposits "
                    "(what the payer sent) on their credit day, less any later reversed; payouts are confirmed "
                    "payouts. Computed from the ledger; USD valued at the time of each event."))
