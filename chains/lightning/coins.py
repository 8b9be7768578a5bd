"""The coin of the lightning plugin (SPEC 2.7): BTC_LN.

Amounts in BTC with satoshi precision; credited the moment an invoice is paid.
"""

from __future__ import annotations

from ...core.coins import Coin

COINS: tuple[Coin, ...] = (
    Coin("BTC_LN", "Bitcoin Lightning", "lightning", 8, 0, "0.00000001", "lightning",
         price_id="bitcoin", dev_price_usd="60000", rank=20),
)
