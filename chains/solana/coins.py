"""The coin of the solana plugin (SPEC 2.7): SOL."""

from __future__ import annotations

from ...api import Coin

# min_payment: a payment goes to a fresh system account, and a transfer leaving a new account below the
# rent-exempt minimum of a data-less account (890,880 lamports: 128 bytes x 3,480 lamports x 2 years) fails.
COINS: tuple[Coin, ...] = (
    Coin("SOL", "Solana", "solana", 9, 32, "0.01", "solana", min_payment="0.00089088",
         default_accepted=True, price_id="solana", dev_price_usd="150", rank=18),
)
