"""The coin of the monero plugin (SPEC 2.7): XMR, source-only.

Source-only: swapped into the merchant's settlement coin, never held nor paid
out, and there is no standing address to receive it at.
"""

from __future__ import annotations

from ...core.coins import Coin

COINS: tuple[Coin, ...] = (
    Coin("XMR", "Monero", "monero", 12, 10, "0", "xmr", payable=False, receive_address=False,
         settles_only_via_swap=True, price_id="monero", dev_price_usd="160", rank=19),
)
