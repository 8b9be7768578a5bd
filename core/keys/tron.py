"""Tron addresses: 0x41 + keccak-derived 20 bytes, Base58Check (``T...``).

Why: TRX and the TRC-20 tokens share one T address per (merchant, user). The 20
bytes are computed exactly like an EVM address; only the version byte and the
Base58Check encoding differ. Validation accepts the Base58 form only, never
the 41-prefixed hex form, so a single spelling reaches the ledger.
"""

from __future__ import annotations

from .base58check import b58check_decode, b58check_encode
from .burn import check_burn_literal, check_zero_payload
from .errors import AddressError
from .evm import evm_address_bytes
from .inputs import clean

__all__ = ["TRON_VERSION", "tron_address", "validate_tron"]

TRON_VERSION = 0x41


def tron_address(public_key: bytes) -> str:
    """T-address of a compressed or uncompressed secp256k1 public key."""
    return b58check_encode(bytes([TRON_VERSION]) + evm_address_bytes(public_key))


def validate_tron(address: object, network: str = "mainnet") -> str:
    """Tron payout destination (same format on mainnet and the Shasta/Nile testnets)."""
    text = clean(address)
    if not text.startswith("T"):
        raise AddressError("Tron address must start with T")
    check_burn_literal("tron", text)
    payload = b58check_decode(text, 21)
    if payload[0] != TRON_VERSION:
        raise AddressError(f"network byte 0x{payload[0]:02x} is not Tron's 0x41")
    check_zero_payload(payload[1:], "account id")
    return text
