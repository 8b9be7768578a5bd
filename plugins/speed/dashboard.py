"""The speed policy as a settings page: per coin, tiers written ``0.1:1, 2:3`` (up to 0.1 at 1 confirmation, ...)."""

from __future__ import annotations

from typing import Any, Mapping

from ...api import AmountError, DashboardView, ValidationError
from . import store

MAX_CONFIRMATIONS = 1_000
MAX_TIERS = 10


def receivable_coins(gateway: Any) -> list[Any]:
    return [coin for coin in gateway.coins if coin.receivable]


def _shown(coin: Any, tiers: list[tuple[int, int]]) -> str:
    return ", ".join(f"{coin.format(up_to)}:{confirmations}" for up_to, confirmations in tiers)


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str]) -> DashboardView:
    tiers = await store.all_tiers(gateway, merchant_id)
    coins = [{"symbol": coin.symbol, "name": coin.name, "floor": coin.confirmations,
              "tiers": _shown(coin, tiers.get(coin.symbol, []))} for coin in receivable_coins(gateway)]
    return DashboardView("speed/dashboard.html", {"coins": coins})


def parse_tiers(coin: Any, text: str, field: str) -> list[tuple[int, int]]:
    """``"0.1:1, 2:3"`` as [(units, confirmations)], each at least the coin's floor; ValidationError on ``field``."""
    tiers: dict[int, int] = {}
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        amount, sep, count = part.partition(":")
        if not sep or not count.strip().isdigit():
            raise ValidationError({field: "write tiers as amount:confirmations, separated by commas (0.1:1, 2:3)"})
        try:
            units = coin.to_units(amount.strip())
        except AmountError as exc:
            raise ValidationError({field: exc.problem}) from None
        confirmations = int(count.strip())
        if not coin.confirmations <= confirmations <= MAX_CONFIRMATIONS:
            raise ValidationError({field: f"confirmations must be between {coin.confirmations} (the coin's safe"
                                          f" floor) and {MAX_CONFIRMATIONS}"})
        tiers[units] = confirmations
    if len(tiers) > MAX_TIERS:
        raise ValidationError({field: f"at most {MAX_TIERS} tiers"})
    return sorted(tiers.items())


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any]) -> None:
    tiers = {coin.symbol: parse_tiers(coin, str(form.get(f"tiers_{coin.symbol}", "")), f"tiers_{coin.symbol}")
             for coin in receivable_coins(gateway)}
    await store.replace(gateway, merchant_id, {coin: rows for coin, rows in tiers.items() if rows})
