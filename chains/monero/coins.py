"""The coin of the monero plugin (SPEC 2.7): XMR, source-only.

Source-only: swapped into the merchant's settlement coin, never held nor paid
out, and there is no standing address to receive it at.
"""

from __future__ import annotations

from ...api import Coin

# SPEC 2.7 lists no confirmation count and no minimum payout ("not payable"); SPEC 2.6 types both, so the
# coin table shows the 10 confirmations the swap detection waits for and min_payout "0", and says so.
NOTE = ("Source-only: never held and never paid out, so min_payout is 0 (there is no XMR payout). A deposit is"
        " swapped into the merchant's settlement coin once it has 10 confirmations.")

COINS: tuple[Coin, ...] = (
    Coin("XMR", "Monero", "monero", 12, 10, None, "xmr", payable=False, receive_address=False,
         settles_only_via_swap=True, price_id="monero", dev_price_usd="160", rank=19, note=NOTE),
)
