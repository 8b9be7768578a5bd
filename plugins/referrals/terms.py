"""The referral terms (SPEC 4.7): 2000 bps of each referee's platform fees for 12 months."""

from __future__ import annotations

import calendar
from datetime import datetime, UTC

RATE_BPS = 2000
ELIGIBILITY_MONTHS = 12


def eligibility_ends_at(signed_up_at: int, months: int = ELIGIBILITY_MONTHS) -> int:
    """``months`` calendar months after sign-up, same UTC time of day; a day missing from the
    target month (31 January + 1 month) clamps to that month's last day."""
    start = datetime.fromtimestamp(signed_up_at, tz=UTC)
    month_index = start.month - 1 + months
    year, month = start.year + month_index // 12, month_index % 12 + 1
    day = min(start.day, calendar.monthrange(year, month)[1])
    return int(start.replace(year=year, month=month, day=day).timestamp())


def earning_units(fee: int, rate_bps: int = RATE_BPS) -> int:
    """The referrer's share of a platform fee, rounded down: the platform never pays out more than
    the rate (the remainder stays a platform fee)."""
    return fee * rate_bps // 10_000 if fee > 0 else 0
