"""Bech32/Bech32m segwit addresses for Bitcoin and Litecoin (BIP-173, BIP-350).

Why: deposit addresses are native P2WPKH (``bc1q``/``ltc1q``); payout
destinations may be P2WPKH, P2WSH (witness v0, 20 or 32 bytes) or taproot
(witness v1, 32 bytes, Bech32m). The ``bech32`` package provides the checksum
polymod and the bit conversion; it predates Bech32m, so the constant check and
the detailed error reasons live here.
"""

from __future__ import annotations

import bech32 as _bech32

from ...api import AddressError
from ...api.addresses import burn_list, check_burn_literal, check_zero_payload, clean, hash160

__all__ = [
    "HRPS",
    "decode_bech32",
    "decode_segwit",
    "p2wpkh_address",
    "validate_btc",
    "validate_ltc",
    "validate_segwit",
]

BECH32_CONST = 1
BECH32M_CONST = 0x2BC830A3
SEGWIT_MAX_LENGTH = 90

# Human-readable parts per family and network.
HRPS: dict[str, dict[str, str]] = {
    "btc": {"mainnet": "bc", "testnet": "tb", "regtest": "bcrt"},
    "ltc": {"mainnet": "ltc", "testnet": "tltc", "regtest": "rltc"},
}

_CHARSET_INDEX = {c: i for i, c in enumerate(_bech32.CHARSET)}


def decode_bech32(text: str, max_length: int | None = SEGWIT_MAX_LENGTH) -> tuple[str, list[int], int]:
    """Split and checksum-verify a Bech32 or Bech32m string.

    Returns (hrp in lower case, data words without the checksum, constant) where
    constant is BECH32_CONST or BECH32M_CONST. ``max_length=None`` lifts the
    90-character limit (BOLT 11 invoices).
    """
    if max_length is not None and len(text) > max_length:
        raise AddressError(f"bech32 string longer than {max_length} characters")
    if any(ord(c) < 33 or ord(c) > 126 for c in text):
        raise AddressError("character out of range")
    if text.lower() != text and text.upper() != text:
        raise AddressError("mixed upper and lower case")
    text = text.lower()
    pos = text.rfind("1")
    if pos < 1:
        raise AddressError("missing human-readable prefix or separator")
    if pos + 7 > len(text):
        raise AddressError("checksum too short")
    hrp = text[:pos]
    try:
        data = [_CHARSET_INDEX[c] for c in text[pos + 1:]]
    except KeyError:
        raise AddressError("invalid bech32 character") from None
    const = _bech32.bech32_polymod(_bech32.bech32_hrp_expand(hrp) + data)
    if const not in (BECH32_CONST, BECH32M_CONST):
        raise AddressError("bad checksum")
    return hrp, data[:-6], const


# Well-known burn destinations per family (docs/keys.md), compared case-insensitively.
BURN_ADDRESSES: dict[str, frozenset[str]] = {
    "btc": burn_list((
        "1BitcoinEaterAddressDontSendf59kuE",  # vanity burn address, P2PKH
        "1111111111111111111114oLvT2",  # P2PKH of the zero hash
        "bc1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq9e75rs",  # P2WPKH of the zero program
    ), caseless=True),
    "ltc": frozenset(),
}

_KNOWN_HRPS = {h: (fam, net) for fam, nets in HRPS.items() for net, h in nets.items()}


def _check_prefix(lower: str, hrp: str) -> None:
    """Say which network/coin a wrong prefix belongs to, or that legacy is refused."""
    if lower.startswith(hrp + "1"):
        return
    for other, (fam, net) in sorted(_KNOWN_HRPS.items(), key=lambda kv: -len(kv[0])):
        if lower.startswith(other + "1"):
            raise AddressError(f"prefix {other}1 is a {fam} {net} address; expected {hrp}1")
    if lower[:1] in ("1", "3", "l", "m", "2", "n", "q"):
        raise AddressError(
            f"legacy (Base58) addresses are not accepted; use a native segwit {hrp}1 address"
        )
    raise AddressError(f"wrong prefix; expected {hrp}1")


def decode_segwit(text: str, hrp: str) -> tuple[int, bytes]:
    """Decode a segwit address for ``hrp`` into (witness version, program),
    accepting only P2WPKH, P2WSH and taproot (v1, 32 bytes)."""
    _check_prefix(text.lower(), hrp)
    got_hrp, data, const = decode_bech32(text)
    if got_hrp != hrp:  # e.g. a second "1" inside the data part
        raise AddressError(f"wrong prefix; expected {hrp}1")
    if not data:
        raise AddressError("empty data section")
    version = data[0]
    if version > 16:
        raise AddressError("invalid witness version")
    program = _bech32.convertbits(data[1:], 5, 8, False)
    if program is None:
        raise AddressError("invalid padding in witness program")
    if not 2 <= len(program) <= 40:
        raise AddressError("invalid witness program length")
    if version == 0 and const != BECH32_CONST:
        raise AddressError("witness version 0 must use a Bech32 checksum, not Bech32m")
    if version != 0 and const != BECH32M_CONST:
        raise AddressError("witness version 1+ must use a Bech32m checksum")
    if version == 0 and len(program) not in (20, 32):
        raise AddressError("witness v0 program must be 20 (P2WPKH) or 32 (P2WSH) bytes")
    if version == 1 and len(program) != 32:
        raise AddressError("unsupported witness v1 program length (taproot is 32 bytes)")
    if version > 1:
        raise AddressError(f"unsupported witness version {version}")
    return version, bytes(program)


def validate_segwit(address: object, family: str, network: str = "mainnet") -> str:
    """Validate a BTC or LTC destination; returns the lower-case address."""
    try:
        hrp = HRPS[family][network]
    except KeyError:
        raise AddressError(f"no segwit prefix for {family} {network}") from None
    text = clean(address)
    check_burn_literal(text, BURN_ADDRESSES.get(family, frozenset()), family, caseless=True)
    version, program = decode_segwit(text, hrp)
    check_zero_payload(program, f"witness v{version} program")
    return text.lower()


def validate_btc(address: object, network: str = "mainnet") -> str:
    """Bitcoin payout destination: bech32 P2WPKH/P2WSH or bech32m taproot."""
    return validate_segwit(address, "btc", network)


def validate_ltc(address: object, network: str = "mainnet") -> str:
    """Litecoin payout destination: bech32 P2WPKH/P2WSH or bech32m taproot."""
    return validate_segwit(address, "ltc", network)


# Deposit-address fast path. The same BIP-173 polymod as bech32.bech32_polymod,
# with the five generator XORs folded into a 32-entry table: address derivation
# runs it once per address, validation keeps using the library's. The tests
# check both against each other.
_GENERATORS = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)


def _table_entry(top: int) -> int:
    value = 0
    for i, generator in enumerate(_GENERATORS):
        if (top >> i) & 1:
            value ^= generator
    return value


_POLYMOD_TABLE = tuple(_table_entry(top) for top in range(32))


def _polymod(values: list[int]) -> int:
    chk = 1
    for value in values:
        chk = ((chk & 0x1FFFFFF) << 5) ^ value ^ _POLYMOD_TABLE[chk >> 25]
    return chk


_HRP_EXPANDED: dict[str, list[int]] = {}


def p2wpkh_address(public_key: bytes, hrp: str) -> str:
    """Native segwit v0 address of a 33-byte compressed public key."""
    if len(public_key) != 33:
        raise ValueError("P2WPKH needs a 33-byte compressed public key")
    expanded = _HRP_EXPANDED.get(hrp)
    if expanded is None:
        expanded = _HRP_EXPANDED.setdefault(hrp, _bech32.bech32_hrp_expand(hrp))
    program = int.from_bytes(hash160(public_key), "big")
    # witness version 0, then the 160-bit program as 32 five-bit words (no padding)
    data = [0] + [(program >> shift) & 31 for shift in range(155, -1, -5)]
    checksum = _polymod(expanded + data + [0, 0, 0, 0, 0, 0]) ^ BECH32_CONST
    data += [(checksum >> shift) & 31 for shift in (25, 20, 15, 10, 5, 0)]
    return hrp + "1" + "".join([_bech32.CHARSET[d] for d in data])
