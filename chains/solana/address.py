"""Solana addresses: Base58 of the 32-byte ed25519 public key.

Why: Solana has no checksum and no version byte; the only structural checks are
the Base58 alphabet, a length of 32..44 characters and a decoding to exactly 32
bytes in canonical form. Off-curve addresses (program-derived) are accepted:
they are legitimate destinations for some programs.
"""

from __future__ import annotations

import base58

from ...api import AddressError, AddressFamily, DerivationScheme, ED25519, coin_type_for
from ...api.addresses import B58_ALPHABET, burn_list, check_burn_literal, check_zero_payload, clean

__all__ = ["BURN_ADDRESSES", "address_family", "solana_address", "validate_solana"]

_B58_SET = frozenset(B58_ALPHABET)
# The all-zero key (the System Program) and the Incinerator (docs/keys.md).
BURN_ADDRESSES = burn_list((
    "11111111111111111111111111111111",
    "1nc1nerator11111111111111111111111111111111",
))


def solana_address(public_key: bytes) -> str:
    if len(public_key) != 32:
        raise ValueError("a Solana address is a 32-byte ed25519 public key")
    return base58.b58encode(public_key).decode("ascii")


def validate_solana(address: object, network: str = "mainnet") -> str:
    """Solana payout destination (same format on every cluster)."""
    text = clean(address)
    if not 32 <= len(text) <= 44:
        raise AddressError(f"Solana address has {len(text)} characters; expected 32 to 44")
    if any(c not in _B58_SET for c in text):
        raise AddressError("contains a character outside the Base58 alphabet")
    check_burn_literal(text, BURN_ADDRESSES, "solana")
    raw = base58.b58decode(text)
    if len(raw) != 32:
        raise AddressError(f"decodes to {len(raw)} bytes; expected 32")
    if base58.b58encode(raw).decode("ascii") != text:
        raise AddressError("non-canonical Base58 encoding")
    check_zero_payload(raw, "public key")
    return text


def address_family(network: str) -> AddressFamily:
    """The ``solana`` family: SLIP-10 ed25519 m/44'/501'/A'/I' (501' on every network)."""
    return AddressFamily(
        "solana", network, "Solana account (ed25519)", validate_solana,
        DerivationScheme(ED25519, 44, coin_type_for(501, network, keep_on_test_networks=True),
                         hardened_index=True),
        solana_address, burn_addresses=BURN_ADDRESSES,
    )
