"""Money as the dashboard shows it: fiat prices to the currency's minor unit, balances with their USD value.

Never a float: a fiat price is the stored decimal text, a balance's value is
``usd_value`` of its integer base units at the prices service's last good
quote (none older than ``STALE_LIMIT_SECONDS``: no value rather than a stale one).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Mapping

from ...api import fiat_text, ledger, usable_quote, usd_value
from ...api import PRICES


async def balance_cards(gateway: Any, merchant_id: str) -> list[dict[str, Any]]:
    """Each coin with a balance: ``coin``, ``amount`` (the coin's own format) and ``usd`` (``12.35 USD`` or None)."""
    table = await ledger.merchant_balances(gateway.db, merchant_id)
    service = gateway.services.get(PRICES)
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


def part_paid(gateway: Any, payment: Mapping[str, Any]) -> dict[str, str] | None:
    """An open payment paid in part: ``received`` and ``due`` in its coin (the API's status stays Paying); None
    otherwise. Sums the view's transactions in base units; a failed transfer does not count."""
    coin = gateway.coins.get(payment.get("pay_currency") or "")
    if payment["status"] not in ("Waiting", "Paying") or coin is None or not payment.get("pay_amount"):
        return None
    paid = sum(coin.to_units(t["amount"]) for t in payment.get("transactions") or ()
               if t["coin"] == coin.symbol and str(t["status"]).lower() != "failed")
    due = coin.to_units(payment["pay_amount"]) - paid
    return {"received": coin.format(paid), "due": coin.format(due)} if paid and due > 0 else None


def rate_text(coin: str, rate: Any, currency: Any) -> str:
    """A locked rate as a sentence of money: ``1 BTC = 60,000.00 USD``. A rate below one minor unit of the
    currency keeps its own digits (``1 DOGE = 0.0812 USD`` would otherwise read 0.08; a tiny coin 0.00)."""
    text = fiat_text(rate, currency)
    if not text:
        return ""
    value = Decimal(str(rate))
    if value < 1 and Decimal(text.split()[0].replace(",", "")) != value:
        text = f"{value.normalize():f} {currency}"
    return f"1 {coin} = {text}"
