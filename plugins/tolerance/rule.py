"""Whether a short payment is within its merchant's tolerance: the one decision this plugin makes."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from . import store

CREDITED = "CREDITED"  # SPEC 2.3's deposit status
STATIC = "static"  # a static address has no amount to fall short of
BASIS_POINTS = 10_000


def allowed_shortfall(pay_units: int, percent_bp: int, absolute_units: int) -> int:
    """The most a payment of ``pay_units`` may fall short: the larger of the share (rounded down) and the
    absolute amount, so a merchant can say "1 %" and also "up to 500 sat on any invoice"."""
    return max(pay_units * percent_bp // BASIS_POINTS, absolute_units)


async def covered_within_tolerance(gateway: Any, payment: Mapping[str, Any],
                                   deposits: Sequence[Mapping[str, Any]]) -> bool | None:
    """True for a payment short by no more than its merchant allows; None otherwise (the core decides).

    Only credited money counts: a deposit still confirming may be double-spent, so it covers nothing yet.
    """
    if payment["type"] == STATIC:
        return None
    db = gateway.db
    credited = sum(db.to_int(d["amount"]) for d in deposits if d["status"] == CREDITED)
    pay_units = db.to_int(payment["pay_amount"])
    if credited == 0 or credited >= pay_units:
        return None
    tolerance = await store.tolerance_of(gateway, payment["merchant_id"], payment["pay_currency"])
    if tolerance is None:
        return None
    return True if pay_units - credited <= allowed_shortfall(pay_units, *tolerance) else None
