"""Money as the dashboard shows it: fiat prices to the currency's minor unit, balances with their USD value.

Never a float: a fiat price is the stored decimal text, a balance's value is
``usd_value`` of its integer base units at the prices service's last good
quote (none older than ``STALE_LIMIT_SECONDS``: no value rather than a stale one).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from ...api import ledger, usable_quote, usd_value

MINOR_DIGITS = {"JPY": 0}  # ISO 4217 minor units of the SPEC 4.2 fiat currencies: 2 unless listed


def fiat_text(amount: Any, currency: Any) -> str:
    """``25`` USD -> ``25.00 USD``; empty when there is no fiat price (or it is not a number)."""
    if amount in (None, "") or not currency:
        return ""
    try:
        value = Decimal(str(amount))
    except InvalidOperation:
        return ""
    if not value.is_finite():
        return ""
    digits = MINOR_DIGITS.get(str(currency), 2)
    return f"{value.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP):,f} {currency}"


async def balance_cards(gateway: Any, merchant_id: str) -> list[dict[str, Any]]:
    """Each coin with a balance: ``coin``, ``amount`` (the coin's own format) and ``usd`` (``12.35 USD`` or None)."""
    table = await ledger.merchant_balances(gateway.db, merchant_id)
    service = gateway.services.get("prices")
    quotes = await service.quotes() if service is not None and table else {}
    now = gateway.clock()
    cards = []
    for symbol, units in sorted(table.items()):
        if not units:
            continue
        coin = gateway.coins.get(symbol)
        quote = usable_quote(quotes.get(symbol), now) if coin is not None else None
        cards.append({
            "coin": symbol, "amount": coin.format(units) if coin is not None else str(units),
            "usd": fiat_text(usd_value(units, coin.decimals, quote.usd), "USD") if coin and quote else None,
        })
    return cards
