"""The coin of the solana plugin (SPEC 2.7): SOL."""

from __future__ import annotations

from ...api import Coin

COINS: tuple[Coin, ...] = (
    Coin("SOL", "Solana", "solana", 9, 32, "0.01", "solana",
         default_accepted=True, price_id="solana", dev_price_usd="150", rank=18),
)
