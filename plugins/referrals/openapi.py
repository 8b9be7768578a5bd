"""The referrals plugin documents its route in ``/openapi.json``."""

from __future__ import annotations

from ...api.openapi import Op, envelope, obj, ref

STRING, INTEGER, BOOLEAN = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
USD = {"type": "string", "description": "US dollars, exact decimal (valued when each fee was earned)."}

REFEREE = obj({"account_id": STRING, "signed_up_at": INTEGER, "eligibility_ends_at": INTEGER, "enabled": BOOLEAN,
               "fees_usd": USD, "your_earnings_usd": USD})
REFERRAL = obj({"referral_link": STRING, "referral_rate_bps": INTEGER, "eligibility_months": INTEGER,
                "referees_count": INTEGER, "total_earnings_usd": USD,
                "referees": {"type": "array", "items": ref("Referee")}})


def register(registry) -> None:
    registry.add_schema("Referee", REFEREE)
    registry.add_schema("Referral", REFERRAL)
    registry.add(Op(
        "GET", "/dashboard/referrals", "Referral statistics", "Dashboard: account", envelope(ref("Referral")),
        auth=("jwt",),
        description="The referrer earns 2000 bps of each referee's platform fees for 12 months after the "
                    "referee's sign-up, credited to the referrer's balance in the deposit's coin as a ledger "
                    "posting from the platform fee account. Only credited deposits count; a reversed deposit "
                    "reverses the earning. Disabled referees stay listed. Sign-up takes ref=<account id>."))
