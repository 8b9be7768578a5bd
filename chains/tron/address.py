"""Tron addresses: 0x41 + keccak-derived 20 bytes, Base58Check (``T...``).

Why: TRX and the TRC-20 tokens share one T address per (merchant, user). The 20
bytes are computed exactly like an EVM address; only the version byte and the
Base58Check encoding differ. Validation accepts the Base58 form only, never
the 41-prefixed hex form, so a single spelling reaches the ledger.
"""

from __future__ import annotations

from ...api import AddressError, AddressFamily, DerivationScheme, SECP256K1, coin_type_for
from ...api.addresses import b58check_decode, b58check_encode, burn_list, check_burn_literal, check_zero_payload, clean
from ..evm.address import evm_address_bytes

__all__ = ["BURN_ADDRESSES", "TRON_VERSION", "address_bytes", "address_family", "from_hex", "tron_address",
           "validate_tron"]

TRON_VERSION = 0x41
# 0x41 + 20 zero bytes, Tron's zero address (docs/keys.md).
BURN_ADDRESSES = burn_list(("T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb",))


def tron_address(public_key: bytes) -> str:
    """T-address of a compressed or uncompressed secp256k1 public key."""
    return b58check_encode(bytes([TRON_VERSION]) + evm_address_bytes(public_key))


def address_bytes(address: str) -> bytes:
    """The 21 bytes (0x41 + account id) of a T address, the form inside transactions."""
    payload = b58check_decode(address, 21)
    if payload[0] != TRON_VERSION:
        raise AddressError(f"network byte 0x{payload[0]:02x} is not Tron's 0x41")
    return payload


def from_hex(value: str) -> str:
    """A T address from the node's hex form: ``41`` + 40 hex digits, or the bare 40 of an event log."""
    raw = bytes.fromhex(value[2:] if value.startswith("0x") else value)
    if len(raw) == 20:
        raw = bytes([TRON_VERSION]) + raw
    if len(raw) != 21 or raw[0] != TRON_VERSION:
        raise AddressError("not a Tron account id")
    return b58check_encode(raw)


def validate_tron(address: object, network: str = "mainnet") -> str:
    """Tron payout destination (same format on mainnet and the Shasta/Nile testnets)."""
    text = clean(address)
    if not text.startswith("T"):
        raise AddressError("Tron address must start with T")
    check_burn_literal(text, BURN_ADDRESSES, "tron")
    payload = b58check_decode(text, 21)
    if payload[0] != TRON_VERSION:
        raise AddressError(f"network byte 0x{payload[0]:02x} is not Tron's 0x41")
    check_zero_payload(payload[1:], "account id")
    return text


def address_family(network: str) -> AddressFamily:
    """The ``tron`` family: m/44'/195'/A'/0/I, one T address for TRX and its tokens."""
    return AddressFamily(
        "tron", network, "Tron account (TRX and TRC-20 tokens)", validate_tron,
        DerivationScheme(SECP256K1, 44, coin_type_for(195, network)),
        tron_address, "tpub" if network != "mainnet" else "xpub", burn_addresses=BURN_ADDRESSES,
    )
