"""The bitcoin plugin's address families: btc, ltc (native segwit) and doge (legacy).

Registered through ``register_address_families`` on every network; deposit
paths m/84'/0'/A'/C/I (btc), m/84'/2'/A'/C/I (ltc), m/44'/3'/A'/C/I (doge),
test networks with coin type 1'.
"""

from __future__ import annotations

from functools import partial

from ...api import AddressFamily, DerivationScheme, SECP256K1, coin_type_for
from .doge import BURN_ADDRESSES as DOGE_BURN_ADDRESSES
from .doge import doge_p2pkh_address, validate_doge
from .segwit import BURN_ADDRESSES as SEGWIT_BURN_ADDRESSES
from .segwit import HRPS, p2wpkh_address, validate_btc, validate_ltc


def address_families(network: str) -> tuple[AddressFamily, ...]:
    test = network != "mainnet"
    return (
        AddressFamily(
            "btc", network, "Bitcoin native segwit (P2WPKH)", validate_btc,
            DerivationScheme(SECP256K1, 84, coin_type_for(0, network), utxo=True),
            partial(p2wpkh_address, hrp=HRPS["btc"][network]),
            "vpub" if test else "zpub", burn_addresses=SEGWIT_BURN_ADDRESSES["btc"],
        ),
        AddressFamily(
            "ltc", network, "Litecoin native segwit (P2WPKH)", validate_ltc,
            DerivationScheme(SECP256K1, 84, coin_type_for(2, network), utxo=True),
            partial(p2wpkh_address, hrp=HRPS["ltc"][network]),
            "vpub" if test else "zpub", burn_addresses=SEGWIT_BURN_ADDRESSES["ltc"],
        ),
        AddressFamily(
            "doge", network, "Dogecoin legacy P2PKH", validate_doge,
            DerivationScheme(SECP256K1, 44, coin_type_for(3, network), utxo=True),
            partial(doge_p2pkh_address, network=network),
            "tpub" if test else "xpub", burn_addresses=DOGE_BURN_ADDRESSES,
        ),
    )
