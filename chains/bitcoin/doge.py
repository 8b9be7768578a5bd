"""Dogecoin legacy addresses: P2PKH/P2SH in Base58Check.

Why: Dogecoin has no segwit; its wallets use P2PKH (mainnet version 0x1e, the
``D...`` addresses) and P2SH (0x16). Testnet uses 0x71/0xc4; regtest uses
0x6f/0xc4 (Dogecoin Core chainparams). Deposit addresses are P2PKH of the
compressed public key (BIP-44 m/44'/3'/...).
"""

from __future__ import annotations

from ...api import AddressError
from ...api.addresses import (
    b58check_decode, b58check_encode, burn_list, check_burn_literal, check_zero_payload, clean, hash160,
)

__all__ = ["DOGE_VERSIONS", "doge_p2pkh_address", "validate_doge"]

# network -> (P2PKH version, P2SH version)
# P2PKH of the zero hash160 (docs/keys.md).
BURN_ADDRESSES = burn_list(("D596YFweJQuHY1BbjazZYmAbt8jJPbKehC",))

DOGE_VERSIONS: dict[str, tuple[int, int]] = {
    "mainnet": (0x1E, 0x16),
    "testnet": (0x71, 0xC4),
    "regtest": (0x6F, 0xC4),
}


def doge_p2pkh_address(public_key: bytes, network: str = "mainnet") -> str:
    """P2PKH address of a 33-byte compressed public key."""
    if len(public_key) != 33:
        raise ValueError("DOGE P2PKH needs a 33-byte compressed public key")
    return b58check_encode(bytes([DOGE_VERSIONS[network][0]]) + hash160(public_key))


def validate_doge(address: object, network: str = "mainnet") -> str:
    """Dogecoin payout destination (P2PKH or P2SH for the network)."""
    try:
        p2pkh, p2sh = DOGE_VERSIONS[network]
    except KeyError:
        raise AddressError(f"unknown Dogecoin network {network}") from None
    text = clean(address)
    check_burn_literal(text, BURN_ADDRESSES, "doge")
    payload = b58check_decode(text, 21)
    version = payload[0]
    if version not in (p2pkh, p2sh):
        other = [n for n, vs in DOGE_VERSIONS.items() if version in vs]
        where = f" (a Dogecoin {'/'.join(other)} version)" if other else ""
        raise AddressError(
            f"network byte 0x{version:02x} is not a Dogecoin {network} P2PKH/P2SH version{where}"
        )
    check_zero_payload(payload[1:], "hash160")
    return text
