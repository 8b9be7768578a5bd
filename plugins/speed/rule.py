"""How many confirmations a deposit needs under its merchant's speed policy: the one decision this plugin makes."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from . import store


def value_at_risk(coin: str, amount: int, payment: Mapping[str, Any] | None, db: Any) -> int:
    """The deposit's amount, or its payment's whole amount when larger: a payer who splits a large payment in
    small deposits must not get each one credited at the small amounts' speed."""
    if payment is not None and payment["pay_currency"] == coin and payment["pay_amount"] is not None:
        return max(amount, db.to_int(payment["pay_amount"]))
    return amount


def confirmations_for(tiers: Sequence[tuple[int, int]], value: int) -> int | None:
    """The confirmations of the first tier (sorted by ``up_to``) that ``value`` fits in; None above them all."""
    for up_to, confirmations in sorted(tiers):
        if value <= up_to:
            return confirmations
    return None


async def required_confirmations(gateway: Any, merchant_id: str, coin: str, amount: int,
                                 payment: Mapping[str, Any] | None) -> int | None:
    tiers = await store.tiers_of(gateway, merchant_id, coin)
    if not tiers:
        return None
    return confirmations_for(tiers, value_at_risk(coin, amount, payment, gateway.db))
