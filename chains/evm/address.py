"""EVM addresses (ETH, BNB, POL and every token on them): EIP-55 hex.

Why: one 0x address per (merchant, user) serves every EVM coin (SPEC 2.7); it is
the last 20 bytes of keccak256 of the uncompressed public key. Payout input is
accepted all-lower, all-upper or correctly checksummed; a wrong mixed-case
checksum is a typo and is refused. The checksum itself is eth-utils'.
"""

from __future__ import annotations

import re

from coincurve import PublicKey
from eth_utils import to_checksum_address

from ...api import AddressError, AddressFamily, DerivationScheme, SECP256K1, coin_type_for
from ...api.addresses import burn_list, check_burn_literal, check_zero_payload, clean, keccak256

__all__ = ["BURN_ADDRESSES", "address_family", "eip55", "evm_address", "evm_address_bytes", "validate_evm"]

# The zero address and the conventional "dead" address (docs/keys.md).
BURN_ADDRESSES = burn_list((
    "0x0000000000000000000000000000000000000000",
    "0x000000000000000000000000000000000000dEaD",
), caseless=True)

_HEX40 = re.compile(r"[0-9a-fA-F]{40}")


def evm_address_bytes(public_key: bytes) -> bytes:
    """20-byte account id: keccak256(uncompressed point without 0x04)[12:]."""
    if len(public_key) == 33:
        public_key = PublicKey(public_key).format(compressed=False)
    if len(public_key) != 65 or public_key[0] != 4:
        raise ValueError("EVM addresses need a secp256k1 public key")
    return keccak256(public_key[1:])[12:]


def eip55(account: bytes) -> str:
    """EIP-55 form of a 20-byte account id (deposit-address fast path).

    A letter is upper case when the matching nibble of keccak256(lower-case hex)
    is >= 8. Validation uses eth-utils' to_checksum_address; the tests check the
    two agree.
    """
    hex_lower = account.hex()
    digest = keccak256(hex_lower.encode("ascii")).hex()
    return "0x" + "".join(
        c.upper() if c > "9" and digest[i] >= "8" else c for i, c in enumerate(hex_lower)
    )


def evm_address(public_key: bytes) -> str:
    """EIP-55 checksummed address of a compressed or uncompressed public key."""
    return eip55(evm_address_bytes(public_key))


def validate_evm(address: object, network: str = "mainnet") -> str:
    """EVM payout destination; returns the EIP-55 form. ``network`` is accepted for
    a uniform signature: EVM addresses are the same on every chain and testnet."""
    text = clean(address)
    if not text.startswith("0x"):
        raise AddressError("EVM address must start with 0x")
    body = text[2:]
    if len(body) != 40:
        raise AddressError(f"EVM address has {len(body)} hex digits; expected 40")
    if not _HEX40.fullmatch(body):
        raise AddressError("EVM address contains non-hex characters")
    checksummed = to_checksum_address("0x" + body.lower())
    if body != body.lower() and body != body.upper() and text != checksummed:
        raise AddressError("EIP-55 mixed-case checksum mismatch")
    check_burn_literal(checksummed, BURN_ADDRESSES, "evm", caseless=True)
    check_zero_payload(bytes.fromhex(body), "account id")
    return checksummed


def address_family(network: str) -> AddressFamily:
    """The ``evm`` family: m/44'/60'/A'/0/I, one address for every EVM coin of a user."""
    return AddressFamily(
        "evm", network, "EVM account (ETH, BNB, POL and tokens), EIP-55", validate_evm,
        DerivationScheme(SECP256K1, 44, coin_type_for(60, network)),
        evm_address, "tpub" if network != "mainnet" else "xpub", burn_addresses=BURN_ADDRESSES,
    )
