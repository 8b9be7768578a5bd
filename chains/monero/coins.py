"""The coin of the monero plugin (SPEC 2.7): XMR, source-only.

Source-only: swapped into the merchant's settlement coin, never held nor paid
out, and there is no standing address to receive it at.
"""

from __future__ import annotations

from ...api import Coin

COINS: tuple[Coin, ...] = (
    # SPEC 2.7 lists no confirmation count and no minimum payout ("not payable"): both null in the
    # coin table (docs/decisions.md); 10 stays the floor the swap detection works with.
    Coin("XMR", "Monero", "monero", 12, 10, None, "xmr", payable=False, receive_address=False,
         settles_only_via_swap=True, price_id="monero", dev_price_usd="160", rank=19, confirmations_listed=False),
)
