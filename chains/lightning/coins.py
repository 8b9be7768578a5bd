"""The coin of the lightning plugin (SPEC 2.7): BTC_LN.

Amounts in BTC with satoshi precision; credited the moment an invoice is paid.
"""

from __future__ import annotations

from ...api import Coin
from .bolt11 import MAX_BOLT11_LENGTH

# SPEC 2.7: no confirmations (credited when the invoice is paid) and no published minimum payout; SPEC 2.6
# types both, so the coin table shows 0 and the only floor, one satoshi, and says so.
NOTE = ("Credited the moment the BOLT11 invoice is paid, so confirmations is 0. Payouts are Lightning payments,"
        " not on-chain: min_payout is one satoshi, under a routing fee ceiling.")

COINS: tuple[Coin, ...] = (
    # decimals stay 8, the precision every BTC_LN amount is written in. Lightning moves bitcoin: no amount
    # exceeds bitcoin's supply cap.
    Coin("BTC_LN", "Bitcoin Lightning", "lightning", 8, 0, None, "lightning",
         price_id="bitcoin", dev_price_usd="60000", rank=20, note=NOTE,
         webhook_status_upper=True, max_destination_length=MAX_BOLT11_LENGTH, max_amount="21000000",
         asset="BTC", network_name="Lightning"),
)
