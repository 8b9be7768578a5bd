"""BOLT 11 Lightning invoice decoding and signature check.

Why: a Lightning payout destination is a BOLT 11 invoice; before the gateway
hands it to its node it must know the network, the exact amount (millisatoshi,
integers only), the payment hash, the expiry and who signed it. Decoding is
pure: no network, no clock (``Bolt11Invoice.is_expired(now)`` takes the time).

Format: bech32 without the 90-character limit; HRP = "ln" + currency prefix
(bc, tb, tbs, bcrt) + optional amount with multiplier m/u/n/p; data = 35-bit
timestamp, tagged fields (type 5 bits, length 10 bits, data), and a 65-byte
recoverable secp256k1 signature over sha256(hrp bytes + data converted 5->8 bits).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Literal, TypedDict

from bech32 import convertbits
from coincurve import PublicKey
from coincurve.ecdsa import cdata_to_der, deserialize_compact
from coincurve.utils import GROUP_ORDER_INT

from ...api import AddressError
from ...api.addresses import clean
from ..bitcoin.segwit import BECH32_CONST, decode_bech32

__all__ = ["BOLT11_NETWORKS", "Bolt11Invoice", "MAX_BOLT11_LENGTH", "decode_bolt11"]

# Longest invoice accepted: route hints make invoices long, but not this long.
MAX_BOLT11_LENGTH = 4096
DEFAULT_EXPIRY = 3600
DEFAULT_MIN_FINAL_CLTV = 18
MAX_AMOUNT_MSAT = 21_000_000 * 100_000_000 * 1000  # total bitcoin supply

# Currency prefix -> network, longest prefix first for matching.
BOLT11_NETWORKS: dict[str, str] = {
    "bcrt": "regtest",
    "tbs": "signet",
    "bc": "mainnet",
    "tb": "testnet",
}

# msat per amount unit for each multiplier, as an exact fraction (num, den).
_MULTIPLIERS = {
    "": (100_000_000_000, 1),  # 1 BTC = 1e11 msat
    "m": (100_000_000, 1),
    "u": (100_000, 1),
    "n": (100, 1),
    "p": (1, 10),
}
_AMOUNT_RE = re.compile(r"([1-9][0-9]{0,20})([munp]?)")
_SIGNATURE_WORDS = 104  # 520 bits
_HALF_ORDER = GROUP_ORDER_INT // 2

_TAG_P, _TAG_D, _TAG_H, _TAG_X = 1, 13, 23, 6
_TAG_N, _TAG_C, _TAG_S, _TAG_9 = 19, 24, 16, 5
# Tagged fields that carry a 32-byte hash, by tag.
_HASH_FIELDS: dict[int, Literal["payment_hash", "description_hash", "payment_secret"]] = {
    _TAG_P: "payment_hash", _TAG_H: "description_hash", _TAG_S: "payment_secret"}


class _Fields(TypedDict, total=False):
    """The tagged fields kept while decoding: the first of each kind, hashes as hex."""

    payment_hash: str
    description_hash: str
    payment_secret: str
    payee: bytes
    description: str
    expiry: int
    min_final_cltv_expiry: int
    features: int


@dataclass(frozen=True)
class Bolt11Invoice:
    """A decoded, signature-checked BOLT 11 invoice."""

    invoice: str  # normalized: lower case, no "lightning:" scheme
    network: str  # mainnet, testnet, signet, regtest
    amount_msat: int | None  # None: the payer chooses the amount
    timestamp: int
    expiry: int  # seconds after timestamp
    payment_hash: str  # hex
    description: str | None
    description_hash: str | None  # hex
    payee: str  # 33-byte compressed node public key, hex
    min_final_cltv_expiry: int = DEFAULT_MIN_FINAL_CLTV
    payment_secret: str | None = None  # hex
    features: int | None = None

    @property
    def expires_at(self) -> int:
        return self.timestamp + self.expiry

    def is_expired(self, now: int | float) -> bool:
        return now >= self.expires_at


def _words_to_int(words: list[int]) -> int:
    value = 0
    for w in words:
        value = (value << 5) | w
    return value


def _words_to_bytes(words: list[int]) -> bytes | None:
    """5-bit words to bytes, dropping the writer's zero padding (None if not zero)."""
    out = convertbits(words, 5, 8, False)
    return None if out is None else bytes(out)


def _verifies(public_key: bytes, compact_sig: bytes, digest: bytes) -> bool:
    try:
        der = cdata_to_der(deserialize_compact(compact_sig))
        return PublicKey(public_key).verify(der, digest, hasher=None)
    except (ValueError, TypeError):  # invalid key or signature encoding
        return False


def _parse_hrp(hrp: str) -> tuple[str, int | None]:
    if not hrp.startswith("ln"):
        raise AddressError("not a Lightning invoice (prefix must start with ln)")
    rest = hrp[2:]
    found = next(((prefix, network) for prefix, network in BOLT11_NETWORKS.items()
                  if rest.startswith(prefix) and (len(rest) == len(prefix) or rest[len(prefix)].isdigit())), None)
    if found is None:
        raise AddressError("unknown Lightning currency prefix")
    prefix, network = found
    amount_text = rest[len(prefix):]
    if not amount_text:
        return network, None
    match = _AMOUNT_RE.fullmatch(amount_text)
    if not match:
        raise AddressError("malformed invoice amount or multiplier")
    number, multiplier = int(match.group(1)), match.group(2)
    num, den = _MULTIPLIERS[multiplier]
    if (number * num) % den:
        raise AddressError("pico-bitcoin amount is not a whole millisatoshi")
    msat = number * num // den
    if msat > MAX_AMOUNT_MSAT:
        raise AddressError("invoice amount exceeds the bitcoin supply")
    return network, msat


def decode_bolt11(invoice: object) -> Bolt11Invoice:
    """Decode and verify a BOLT 11 invoice; raises AddressError (code invalid_address)."""
    text = clean(invoice, MAX_BOLT11_LENGTH)
    if text[:10].lower() == "lightning:":
        text = text[10:]
    hrp, data, const = decode_bech32(text, max_length=None)
    if const != BECH32_CONST:
        raise AddressError("bad checksum")
    network, amount_msat = _parse_hrp(hrp)
    if len(data) < 7 + _SIGNATURE_WORDS:
        raise AddressError("invoice too short")
    sig_words = data[-_SIGNATURE_WORDS:]
    body = data[:-_SIGNATURE_WORDS]
    timestamp = _words_to_int(body[:7])

    fields: _Fields = {}
    pos = 7
    while pos < len(body):
        if pos + 3 > len(body):
            raise AddressError("truncated tagged field")
        tag = body[pos]
        length = (body[pos + 1] << 5) | body[pos + 2]
        pos += 3
        if pos + length > len(body):
            raise AddressError("tagged field runs past the signature")
        words = body[pos:pos + length]
        pos += length
        if tag in _HASH_FIELDS and length == 52 and _HASH_FIELDS[tag] not in fields:
            # 52 words = 32 bytes; a field of another length is skipped (BOLT 11).
            value = _words_to_bytes(words)
            if value is not None:
                fields[_HASH_FIELDS[tag]] = value.hex()
        elif tag == _TAG_N and length == 53 and "payee" not in fields:
            value = _words_to_bytes(words)
            if value is not None:
                fields["payee"] = value
        elif tag == _TAG_D and "description" not in fields:
            value = _words_to_bytes(words)
            if value is None:
                raise AddressError("description field has non-zero padding")
            try:
                fields["description"] = value.decode("utf-8")
            except UnicodeDecodeError:
                raise AddressError("description is not valid UTF-8") from None
        elif tag == _TAG_X and "expiry" not in fields:
            fields["expiry"] = _words_to_int(words)
        elif tag == _TAG_C and "min_final_cltv_expiry" not in fields:
            fields["min_final_cltv_expiry"] = _words_to_int(words)
        elif tag == _TAG_9 and "features" not in fields:
            fields["features"] = _words_to_int(words)
        # every other field (f, r, t, m, unknown, wrong-length p/h/s/n) is skipped

    if "payment_hash" not in fields:
        raise AddressError("invoice has no payment hash")

    sig = _words_to_bytes(sig_words)
    if sig is None or len(sig) != 65:
        raise AddressError("malformed invoice signature")
    recovery_id = sig[64]
    r = int.from_bytes(sig[:32], "big")
    s = int.from_bytes(sig[32:64], "big")
    if recovery_id > 3 or not 0 < r < GROUP_ORDER_INT or not 0 < s <= _HALF_ORDER:
        raise AddressError("invalid invoice signature (range or high-S)")
    body_bytes = convertbits(body, 5, 8, True)
    assert body_bytes is not None, "bech32 decoding yields 5-bit words, and padded conversion accepts any of them"
    signed = hrp.encode("utf-8") + bytes(body_bytes)
    digest = hashlib.sha256(signed).digest()
    stated = fields.get("payee")
    if stated is not None:
        # BOLT 11: with a valid n field, verify against it instead of recovering.
        if not _verifies(stated, sig[:64], digest):
            raise AddressError("invoice signature does not match the payee (n) field")
        payee = stated
    else:
        try:
            recovered = PublicKey.from_signature_and_message(sig, digest, hasher=None)
        except (ValueError, TypeError):  # coincurve's errors for unrecoverable input
            raise AddressError("invoice signature does not recover a public key") from None
        payee = recovered.format(compressed=True)

    return Bolt11Invoice(
        invoice=text.lower(),
        network=network,
        amount_msat=amount_msat,
        timestamp=timestamp,
        expiry=int(fields.get("expiry", DEFAULT_EXPIRY)),
        payment_hash=str(fields["payment_hash"]),
        description=fields.get("description"),
        description_hash=fields.get("description_hash"),
        payee=payee.hex(),
        min_final_cltv_expiry=int(fields.get("min_final_cltv_expiry", DEFAULT_MIN_FINAL_CLTV)),
        payment_secret=fields.get("payment_secret"),
        features=fields.get("features"),
    )
