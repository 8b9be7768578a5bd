"""Judges of address validity that owe nothing to the product's code, for tests/test_keys_fuzz.py.

* Monero: Monero's own published vectors (tests/keys_vectors/monero_validate_address.json,
  from monero-project/monero's functional tests) and a decoder written here from
  Monero's format (8-byte blocks to 11 Base58 characters, Keccak-256 checksum,
  network prefix byte). No Python library for Monero addresses is installed;
  this decoder is checked against those vectors before it judges anything.
* Solana: ``solders`` (the Solana SDK's Pubkey parser).
* Lightning invoices: the ``bolt11`` library (bech32 checksum, human-readable
  part, fields, signature recovery).

Each judge answers True (valid on that network), False, or None (no judge for
that form, e.g. a Lightning Address).
"""

from __future__ import annotations

import json
from pathlib import Path

import bolt11
from Crypto.Hash import keccak
from nacl.bindings import crypto_core_ed25519_is_valid_point
from solders.pubkey import Pubkey

MONERO_VECTORS = json.loads((Path(__file__).resolve().parent / "keys_vectors" / "monero_validate_address.json")
                            .read_text(encoding="utf-8"))
ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
BLOCK_CHARS = (0, 2, 3, 5, 6, 7, 9, 10, 11)  # encoded width of a block of 0..8 bytes (Monero's base58.cpp)
# Network prefix bytes per Monero network: standard, integrated, subaddress (cryptonote_config.h).
MONERO_PREFIXES = {"mainnet": (18, 19, 42), "testnet": (53, 54, 63), "stagenet": (24, 25, 36)}
# The gateway's networks: its ``testnet`` takes Monero's testnet and stagenet (docs/keys.md).
GATEWAY_MONERO = {"mainnet": ("mainnet",), "testnet": ("testnet", "stagenet"), "stagenet": ("stagenet",)}
INTEGRATED = {prefixes[1] for prefixes in MONERO_PREFIXES.values()}
LIGHTNING_CURRENCIES = {"mainnet": {"bc"}, "testnet": {"tb", "tbs"}, "regtest": {"bcrt"}, "signet": {"tbs"}}


def monero_decode(text: str) -> bytes | None:
    """Monero Base58 to bytes, or None when any block is malformed or overflows."""
    if not text or any(c not in ALPHABET for c in text):
        return None
    out = b""
    for start in range(0, len(text), 11):
        block = text[start:start + 11]
        if len(block) not in BLOCK_CHARS:
            return None
        size = BLOCK_CHARS.index(len(block))
        value = 0
        for char in block:
            value = value * 58 + ALPHABET.index(char)
        if value >= 256 ** size:
            return None
        out += value.to_bytes(size, "big")
    return out


def monero_verdict(text: object, network: str) -> bool:
    """Valid on the gateway's ``network``: prefix, length (69 or 77 bytes), Keccak-256 checksum, keys on the curve."""
    if not isinstance(text, str):
        return False
    raw = monero_decode(text)
    if raw is None or len(raw) < 5:
        return False
    payload, checksum = raw[:-4], raw[-4:]
    if keccak.new(digest_bits=256, data=payload).digest()[:4] != checksum:
        return False
    allowed = {prefix for name in GATEWAY_MONERO[network] for prefix in MONERO_PREFIXES[name]}
    if payload[0] not in allowed or len(raw) != (77 if payload[0] in INTEGRATED else 69):
        return False
    return all(crypto_core_ed25519_is_valid_point(key) for key in (payload[1:33], payload[33:65]))


def solana_verdict(text: object) -> bool:
    if not isinstance(text, str):
        return False
    try:
        return str(Pubkey.from_string(text)) == text
    except ValueError:
        return False


def lightning_invoice_verdict(text: object, network: str) -> bool | None:
    """For invoices only (None for a Lightning Address): the bolt11 library decodes it for this network."""
    if not isinstance(text, str) or "@" in text:
        return None
    try:
        decoded = bolt11.decode(text, ignore_exceptions=True)
    except Exception:  # noqa: BLE001 - any refusal of the library is a False
        return False
    return decoded.currency in LIGHTNING_CURRENCIES[network]
