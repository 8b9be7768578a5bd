"""The ``zed`` address family: ``zed1`` + hash160 of the public key in hex + a 4-byte checksum.

A checksum so that a mistyped payout destination is refused before any
money moves; the prefix names the network, so a test-network address is
refused on mainnet.
"""

from __future__ import annotations

from orbchain.api import NETWORKS, SECP256K1, AddressError, AddressFamily, DerivationScheme, coin_type_for
from orbchain.api.addresses import check_zero_payload, clean, double_sha256, hash160

FAMILY = "zed"
PREFIXES = {"mainnet": "zed1", "testnet": "tzed1", "regtest": "rzed1"}
SLIP44 = 99_999  # unregistered: a test chain's own coin type
HEX = frozenset("0123456789abcdef")


def _checksum(text: str) -> str:
    return double_sha256(text.encode("ascii"))[:4].hex()


def encode(network: str, payload: bytes) -> str:
    """The address of a 20-byte payload on ``network``."""
    text = PREFIXES[network] + payload.hex()
    return text + _checksum(text)


def encoder(network: str):
    return lambda public_key: encode(network, hash160(public_key))


def validate(address: object, network: str) -> str:
    """The canonical (lower-case) address, or ``AddressError`` saying what is wrong."""
    text = clean(address).lower()
    prefix = PREFIXES[network]
    if not text.startswith(prefix):
        raise AddressError(f"a {network} zed address starts with {prefix}")
    body, checksum = text[len(prefix):-8], text[-8:]
    if len(body) != 40 or not set(body + checksum) <= HEX:
        raise AddressError("a zed address is 40 hex digits and an 8-digit checksum after its prefix")
    if _checksum(prefix + body) != checksum:
        raise AddressError("zed address checksum mismatch")
    check_zero_payload(bytes.fromhex(body), "hash")
    return text


def families() -> list[AddressFamily]:
    return [AddressFamily(FAMILY, network, "Zed account", validate,
                          DerivationScheme(SECP256K1, 44, coin_type_for(SLIP44, network)), encoder(network))
            for network in NETWORKS]
