"""The tolerance as a settings page: a percentage and, per coin, an absolute amount, saved together."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any, Mapping

from ...api import AmountError, DashboardView, ValidationError
from . import store
from .rule import BASIS_POINTS

MAX_PERCENT = Decimal(5)  # beyond this a "tolerance" is a discount: refused with the reason


def receivable_coins(gateway: Any) -> list[Any]:
    return [coin for coin in gateway.coins if coin.receivable]


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str]) -> DashboardView:
    percent_bp, absolute = await store.settings_of(gateway, merchant_id)
    coins = [{"symbol": coin.symbol, "name": coin.name,
              "absolute": coin.format(absolute[coin.symbol]) if absolute.get(coin.symbol) else ""}
             for coin in receivable_coins(gateway)]
    return DashboardView("tolerance/dashboard.html", {
        "percent": format((Decimal(percent_bp) / 100).normalize(), "f") if percent_bp else "", "coins": coins,
        "max_percent": MAX_PERCENT})


def _percent_bp(text: str) -> int:
    if not text:
        return 0
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValidationError({"percent": "must be a number such as 0.5"}) from None
    if not value.is_finite() or value < 0 or value > MAX_PERCENT:
        raise ValidationError({"percent": f"must be between 0 and {MAX_PERCENT}"})
    basis_points = value * BASIS_POINTS / 100
    if basis_points != basis_points.to_integral_value():
        raise ValidationError({"percent": "may have at most two decimals"})
    return int(basis_points)


def _absolute(gateway: Any, form: Mapping[str, Any]) -> dict[str, int]:
    amounts: dict[str, int] = {}
    for coin in receivable_coins(gateway):
        text = str(form.get(f"absolute_{coin.symbol}", "")).strip()
        if not text:
            continue
        try:
            amounts[coin.symbol] = coin.to_units(text)
        except AmountError as exc:
            raise ValidationError({f"absolute_{coin.symbol}": exc.problem}) from None
    return amounts


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any]) -> None:
    percent_bp = _percent_bp(str(form.get("percent", "")).strip())
    await store.replace(gateway, merchant_id, percent_bp, _absolute(gateway, form))
