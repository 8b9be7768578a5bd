"""Base58Check decoding with precise error reasons (legacy addresses, extended keys).

Why: ``base58.b58decode_check`` answers every failure with the same ValueError;
a payout form should say whether a character, the length or the checksum is
wrong. Encoding is the ``base58`` package's.
"""

from __future__ import annotations

import base58

from .errors import AddressError
from .hashing import double_sha256

__all__ = ["B58_ALPHABET", "b58check_decode", "b58check_encode"]

B58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_SET = frozenset(B58_ALPHABET)


def b58check_decode(text: str, payload_length: int) -> bytes:
    """Decode Base58Check ``text`` whose payload (version byte(s) + data, without
    the 4-byte checksum) must be ``payload_length`` bytes."""
    bad = next((c for c in text if c not in _B58_SET), None)
    if bad is not None:
        if bad in "0OIl":
            raise AddressError("contains 0, O, I or l, which Base58 never uses")
        raise AddressError("contains a character outside the Base58 alphabet")
    raw = base58.b58decode(text)
    if len(raw) != payload_length + 4:
        raise AddressError(
            f"decodes to {len(raw)} bytes; expected {payload_length + 4}"
        )
    payload, checksum = raw[:-4], raw[-4:]
    if double_sha256(payload)[:4] != checksum:
        raise AddressError("bad Base58Check checksum")
    return payload


def b58check_encode(payload: bytes) -> str:
    return base58.b58encode_check(payload).decode("ascii")
