"""Exact USD valuation of balances against timed price quotes (docs/decisions.md, "Portfolio").

Pure functions, no I/O, so the money rules are tested without a server:
value = amount x spot in Decimal, rounded half-up to cents; a quote older
than ``FRESH_SECONDS`` is marked stale; one older than ``STALE_LIMIT_SECONDS``
(or none at all) is not used: spot and value are null and the coin does not
count towards the total.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Mapping, Sequence

from ...api import CACHE_SECONDS, Quote, usable_quote, usd_value

FRESH_SECONDS = CACHE_SECONDS  # SPEC 4.7: spot prices cached 60 s
CENT = Decimal("0.01")


def usd_text(value: Decimal) -> str:
    """Cents, rounded half-up, as a plain decimal string ("12.35", never "1.2E+1")."""
    return format(value.quantize(CENT, rounding=ROUND_HALF_UP), "f")


def coin_line(coin: Any, units: int, quote: Quote | None,
              now: float) -> tuple[dict[str, Any], Decimal]:  # float ok: a clock time, not money
    """One ``per_coin`` entry and the cents it adds to the total (0 when its price is unusable)."""
    quote = usable_quote(quote, now)
    line: dict[str, Any] = {
        "coin": coin.symbol, "amount": coin.format(units),
        "spot_usd": format(quote.usd, "f") if quote is not None else None,
        "change_24h_pct": None,  # no configured source reports a 24 h change (docs/decisions.md)
        "value_usd": None, "stale": quote is not None and now - quote.at > FRESH_SECONDS,
    }
    if quote is None:
        return line, Decimal(0)
    cents = usd_value(units, coin.decimals, quote.usd)
    line["value_usd"] = format(cents, "f")
    return line, cents


def portfolio(account_id: str, holdings: Sequence[tuple[Any, int]], quotes: Mapping[str, Quote],
              now: float) -> dict[str, Any]:  # float ok: a clock time, not money
    """The SPEC 2.16 record; ``total_usd`` is the sum of the rounded lines, so the page adds up."""
    lines, total = [], Decimal(0)
    for coin, units in holdings:
        line, cents = coin_line(coin, units, quotes.get(coin.symbol), now)
        lines.append(line)
        total += cents
    return {"account_id": account_id, "total_usd": usd_text(total), "per_coin": lines}
