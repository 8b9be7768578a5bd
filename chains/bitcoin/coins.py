"""The coins of the bitcoin plugin (SPEC 2.7): BTC, LTC and DOGE.

Data only; ``orbchain.chains.bitcoin`` registers them through
``register_coins`` and their address families (btc, ltc, doge) through
``register_address_families``.
"""

from __future__ import annotations

from ...api import Coin

# max_amount: the supply cap of the protocol (no amount can be larger); DOGE has none (the default).
# min_payment: the smallest output the plugin creates or asks for, above every node's dust limit for the
# deposit's script (Bitcoin Core's is 294 sat for P2WPKH, 546 for P2PKH; Litecoin's dust relay fee is ten
# times Bitcoin's; Dogecoin Core's soft dust limit is 0.01 DOGE). A payment asks for no less, and the payout
# sender leaves smaller change to the miner and refuses smaller payouts (settings.CoinSpec.change_min_sat).
COINS: tuple[Coin, ...] = (
    Coin("BTC", "Bitcoin", "bitcoin", 8, 2, "0.0001", "btc", min_payment="0.00001",
         default_accepted=True, price_id="bitcoin", dev_price_usd="60000", rank=1, max_amount="21000000"),
    Coin("LTC", "Litecoin", "litecoin", 8, 6, "0.001", "ltc", min_payment="0.0001",
         default_accepted=True, price_id="litecoin", dev_price_usd="80", rank=2, max_amount="84000000"),
    Coin("DOGE", "Dogecoin", "dogecoin", 8, 6, "10", "doge", min_payment="0.01", price_id="dogecoin",
         dev_price_usd="0.15", rank=3),
)

# BIP-21-style URI scheme of each chain, for QR payloads.
URI_SCHEMES = {"bitcoin": "bitcoin", "litecoin": "litecoin", "dogecoin": "dogecoin"}
