"""Writing and signing BOLT 11 invoices, for the devnet node (devnet.py).

Why the gateway writes invoices at all: the devnet Lightning backend stands
in for a node in development, and a node's invoices are signed BOLT 11
strings that wallets and our own decoder (bolt11.py) verify. This is the
inverse of ``decode_bolt11``: HRP = "ln" + currency prefix + the shortest
amount, data = 35-bit timestamp + tagged fields (p, s, d or h, x, c, 9), and
a recoverable secp256k1 signature over sha256(hrp + data as bytes).
"""

from __future__ import annotations

import hashlib

from bech32 import bech32_encode, convertbits
from coincurve import PrivateKey

__all__ = ["NETWORK_PREFIXES", "encode_bolt11"]

NETWORK_PREFIXES = {"mainnet": "bc", "testnet": "tb", "signet": "tbs", "regtest": "bcrt"}

# msat per unit of each multiplier, largest first: the shortest exact one is used.
_MULTIPLIERS = (("", 100_000_000_000), ("m", 100_000_000), ("u", 100_000), ("n", 100))
# Features: var_onion_optin (bit 8) and payment_secret (bit 14), both required, as LND sets them.
FEATURES = (1 << 8) | (1 << 14)

_TAG_P, _TAG_D, _TAG_H, _TAG_X, _TAG_C, _TAG_S, _TAG_9 = 1, 13, 23, 6, 24, 16, 5


def _amount(amount_msat: int) -> str:
    for suffix, unit in _MULTIPLIERS:
        if amount_msat % unit == 0:
            return f"{amount_msat // unit}{suffix}"
    return f"{amount_msat * 10}p"


def _int_words(value: int, minimum: int = 1) -> list[int]:
    words: list[int] = []
    while value:
        words.insert(0, value & 31)
        value >>= 5
    return [0] * max(0, minimum - len(words)) + words


def _bytes_words(data: bytes) -> list[int]:
    words = convertbits(data, 8, 5, True)
    assert words is not None, "padded 8-to-5 conversion accepts any bytes"
    return words


def _field(tag: int, words: list[int]) -> list[int]:
    if len(words) >= 1024:
        raise ValueError("a BOLT 11 field holds at most 1023 words")
    return [tag, len(words) >> 5, len(words) & 31, *words]


def encode_bolt11(key: PrivateKey, *, network: str, payment_hash: str, amount_msat: int | None, timestamp: int,
                  expiry: int, payment_secret: str, description: str = "", description_hash: str | None = None,
                  min_final_cltv_expiry: int = 80) -> str:
    """A BOLT 11 invoice signed by ``key`` (hashes and the secret as hex; amounts in millisatoshi)."""
    hrp = "ln" + NETWORK_PREFIXES[network] + ("" if amount_msat is None else _amount(amount_msat))
    data = _int_words(timestamp, 7)
    data += _field(_TAG_P, _bytes_words(bytes.fromhex(payment_hash)))
    data += _field(_TAG_S, _bytes_words(bytes.fromhex(payment_secret)))
    if description_hash is not None:
        data += _field(_TAG_H, _bytes_words(bytes.fromhex(description_hash)))
    else:
        data += _field(_TAG_D, _bytes_words(description.encode("utf-8")))
    data += _field(_TAG_X, _int_words(expiry))
    data += _field(_TAG_C, _int_words(min_final_cltv_expiry))
    data += _field(_TAG_9, _int_words(FEATURES))
    signed = convertbits(data, 5, 8, True)
    assert signed is not None
    digest = hashlib.sha256(hrp.encode("ascii") + bytes(signed)).digest()
    signature = key.sign_recoverable(digest, hasher=None)  # r || s || recovery id, low S
    return bech32_encode(hrp, data + _bytes_words(signature))
