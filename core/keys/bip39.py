"""BIP-39: mnemonic sentence -> 64-byte seed, and raw hex seeds.

Why: the operator provides the gateway's root secret either as a BIP-39
mnemonic (with an optional passphrase) or as a raw seed in hex (a seed file).
Both end as the byte string that BIP-32 and SLIP-10 start from. Validation
errors name word positions and counts only, never the words themselves, so a
mistyped mnemonic cannot leak into a log.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import unicodedata

from .errors import MnemonicError, SeedError
from .wordlist_en import WORDS

__all__ = [
    "entropy_to_mnemonic",
    "mnemonic_to_seed",
    "normalize_mnemonic",
    "seed_from_hex",
    "seed_from_secret",
]

PBKDF2_ROUNDS = 2048
WORD_COUNTS = (12, 15, 18, 21, 24)
MIN_SEED_BYTES = 16  # BIP-32: a seed is 128 to 512 bits
MAX_SEED_BYTES = 64

_INDEX = {word: i for i, word in enumerate(WORDS)}
_HEX_RE = re.compile(r"[0-9a-fA-F]+")


def normalize_mnemonic(mnemonic: str) -> str:
    """Return the canonical sentence (NFKD, lower case, single spaces) after checking
    word count, every word against the English list, and the checksum.

    Raises MnemonicError; the message never contains a word of the input.
    """
    if not isinstance(mnemonic, str):
        raise MnemonicError("the mnemonic must be text")
    words = unicodedata.normalize("NFKD", mnemonic).lower().split()
    if len(words) not in WORD_COUNTS:
        raise MnemonicError(
            f"a BIP-39 mnemonic has 12, 15, 18, 21 or 24 words; this one has {len(words)}"
        )
    indexes = []
    for position, word in enumerate(words, start=1):
        index = _INDEX.get(word)
        if index is None:
            raise MnemonicError(f"word #{position} is not in the BIP-39 English wordlist")
        indexes.append(index)
    bits = 0
    for index in indexes:
        bits = (bits << 11) | index
    total_bits = 11 * len(words)
    checksum_bits = total_bits // 33
    entropy_bits = total_bits - checksum_bits
    entropy = (bits >> checksum_bits).to_bytes(entropy_bits // 8, "big")
    checksum = bits & ((1 << checksum_bits) - 1)
    expected = hashlib.sha256(entropy).digest()[0] >> (8 - checksum_bits)
    if not hmac.compare_digest(checksum.to_bytes(1, "big"), expected.to_bytes(1, "big")):
        raise MnemonicError(
            "the mnemonic checksum does not match (a word is wrong or the order is changed)"
        )
    return " ".join(words)


def mnemonic_to_seed(mnemonic: str, passphrase: str = "") -> bytes:
    """BIP-39 seed: PBKDF2-HMAC-SHA512(NFKD(mnemonic), "mnemonic" + NFKD(passphrase), 2048)."""
    sentence = normalize_mnemonic(mnemonic)
    if not isinstance(passphrase, str):
        raise MnemonicError("the passphrase must be text")
    salt = "mnemonic" + unicodedata.normalize("NFKD", passphrase)
    return hashlib.pbkdf2_hmac(
        "sha512", sentence.encode("utf-8"), salt.encode("utf-8"), PBKDF2_ROUNDS
    )


def entropy_to_mnemonic(entropy: bytes) -> str:
    """Encode 16..32 bytes of entropy (a multiple of 4) as a mnemonic (for new installs)."""
    if not isinstance(entropy, (bytes, bytearray)) or len(entropy) not in (16, 20, 24, 28, 32):
        raise MnemonicError("entropy must be 16, 20, 24, 28 or 32 bytes")
    entropy = bytes(entropy)
    checksum_bits = len(entropy) * 8 // 32
    bits = int.from_bytes(entropy, "big") << checksum_bits
    bits |= hashlib.sha256(entropy).digest()[0] >> (8 - checksum_bits)
    count = (len(entropy) * 8 + checksum_bits) // 11
    return " ".join(WORDS[(bits >> (11 * (count - 1 - i))) & 0x7FF] for i in range(count))


def seed_from_hex(text: str) -> bytes:
    """Parse a raw seed written as hex (16 to 64 bytes; an optional 0x prefix and
    surrounding whitespace are allowed)."""
    if not isinstance(text, str):
        raise SeedError("the seed must be hex text")
    value = text.strip()
    if value[:2].lower() == "0x":
        value = value[2:]
    if not value or not _HEX_RE.fullmatch(value) or len(value) % 2:
        raise SeedError("the seed is not an even-length hex string")
    seed = bytes.fromhex(value)
    if not MIN_SEED_BYTES <= len(seed) <= MAX_SEED_BYTES:
        raise SeedError(
            f"a seed is {MIN_SEED_BYTES} to {MAX_SEED_BYTES} bytes; this one has {len(seed)}"
        )
    return seed


def seed_from_secret(secret: str, passphrase: str = "") -> bytes:
    """Turn the operator's secret text (a mnemonic, or a hex seed from a seed file)
    into the seed bytes.

    A hex seed already includes any passphrase, so giving both is refused.
    """
    if not isinstance(secret, str):
        raise SeedError("the seed secret must be text")
    stripped = secret.strip()
    body = stripped[2:] if stripped[:2].lower() == "0x" else stripped
    if body and _HEX_RE.fullmatch(body):
        if passphrase:
            raise SeedError("a BIP-39 passphrase cannot be combined with a raw hex seed")
        return seed_from_hex(stripped)
    return mnemonic_to_seed(stripped, passphrase)
