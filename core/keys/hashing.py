"""Hash primitives used by address encodings, in one place.

Why: RIPEMD-160 is missing from hashlib on OpenSSL 3 builds without the legacy
provider, so hash160 falls back to pycryptodome (installed with
eth-hash[pycryptodome]). Keccak-256 is Ethereum's pre-standard SHA-3, which
hashlib's sha3_256 is not, so it comes from eth-hash.
"""

from __future__ import annotations

import hashlib

from eth_hash.auto import keccak as _keccak

__all__ = ["sha256", "double_sha256", "hash160", "keccak256"]


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def double_sha256(data: bytes) -> bytes:
    return hashlib.sha256(hashlib.sha256(data).digest()).digest()


def _ripemd160_hashlib(data: bytes) -> bytes:
    return hashlib.new("ripemd160", data).digest()


def _ripemd160_pycryptodome(data: bytes) -> bytes:
    from Crypto.Hash import RIPEMD160

    return RIPEMD160.new(data).digest()


try:
    hashlib.new("ripemd160", b"")
    _ripemd160 = _ripemd160_hashlib
except (ValueError, TypeError):  # pragma: no cover - depends on the OpenSSL build
    _ripemd160 = _ripemd160_pycryptodome


def hash160(data: bytes) -> bytes:
    """RIPEMD-160 of SHA-256: Bitcoin's public key hash."""
    return _ripemd160(hashlib.sha256(data).digest())


def keccak256(data: bytes) -> bytes:
    """Original Keccak-256 (Ethereum, Tron, Monero), not FIPS SHA3-256."""
    return _keccak(data)
