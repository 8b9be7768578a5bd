"""GET /dashboard/referrals as data (SPEC 2.16 Referral, 4.7).

USD figures are the sums of each earning valued when it was earned (the
price service's price then, kept as integer 1e-8 dollars); reversed
earnings count for nothing. Disabled referees stay listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...api import USD_DECIMALS, format_units, merchant_record, referred_merchants
from .terms import ELIGIBILITY_MONTHS, RATE_BPS, eligibility_ends_at

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway


def usd(units: int) -> str:
    return format_units(int(units), USD_DECIMALS)


async def referral_stats(gateway: "Gateway", merchant_id: str) -> dict[str, Any]:
    me = await merchant_record(gateway, merchant_id)
    referees = await referred_merchants(gateway, merchant_id)
    rows = await gateway.db.fetch_all(
        "SELECT referee_id, SUM(fee_usd) AS fees, SUM(earning_usd) AS earned FROM referral_earnings"
        " WHERE referrer_id = :m AND reversed = FALSE GROUP BY referee_id", {"m": merchant_id})
    sums = {row["referee_id"]: (int(row["fees"] or 0), int(row["earned"] or 0)) for row in rows}
    listed = []
    for referee in referees:
        fees, earned = sums.get(referee.merchant_id, (0, 0))
        listed.append({
            "account_id": referee.account_id, "signed_up_at": referee.signed_up_at,
            "eligibility_ends_at": eligibility_ends_at(referee.signed_up_at), "enabled": referee.enabled,
            "fees_usd": usd(fees), "your_earnings_usd": usd(earned),
        })
    return {
        "referral_link": f"{gateway.config.base_url}/app/signup?ref={me.account_id}",
        "referral_rate_bps": RATE_BPS,
        "eligibility_months": ELIGIBILITY_MONTHS,
        "referees_count": len(referees),
        "total_earnings_usd": usd(sum(earned for _, earned in sums.values())),
        "referees": listed,
    }
