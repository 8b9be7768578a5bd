"""Monero addresses: standard, subaddress and integrated, in Monero's Base58.

Why: XMR is source-only (refund destinations and swap inputs), but a mistyped
Monero address must still be caught before money moves. Monero does not use
Base58Check: it encodes 8-byte blocks into 11 characters each (a shorter last
block uses a fixed shorter width), and its checksum is the first 4 bytes of
Keccak-256 of the payload.

Layout: network byte | public spend key (32) | public view key (32)
        | payment id (8, integrated only) | checksum (4).
"""

from __future__ import annotations

from dataclasses import dataclass

from nacl.bindings import crypto_core_ed25519_is_valid_point

from ...api import AddressError, AddressFamily
from ...api.addresses import B58_ALPHABET, clean, keccak256

__all__ = [
    "MONERO_NETWORK_BYTES",
    "address_family",
    "MoneroAddress",
    "decode_xmr",
    "monero_b58decode",
    "monero_b58encode",
    "validate_xmr",
]

_FULL_BLOCK = 8
_FULL_ENCODED = 11
# encoded length of a block of 0..8 bytes
_ENCODED_SIZES = (0, 2, 3, 5, 6, 7, 9, 10, 11)
_DECODED_SIZE = {enc: dec for dec, enc in enumerate(_ENCODED_SIZES)}
_INDEX = {c: i for i, c in enumerate(B58_ALPHABET)}

# network byte -> (network, kind)
MONERO_NETWORK_BYTES: dict[int, tuple[str, str]] = {
    18: ("mainnet", "standard"),
    19: ("mainnet", "integrated"),
    42: ("mainnet", "subaddress"),
    53: ("testnet", "standard"),
    54: ("testnet", "integrated"),
    63: ("testnet", "subaddress"),
    24: ("stagenet", "standard"),
    25: ("stagenet", "integrated"),
    36: ("stagenet", "subaddress"),
}

# Which Monero networks a gateway network accepts. Monero's regtest (fakechain)
# uses mainnet address bytes; the gateway's "testnet" accepts testnet and stagenet.
_ACCEPTED = {
    "mainnet": frozenset({"mainnet"}),
    "testnet": frozenset({"testnet", "stagenet"}),
    "regtest": frozenset({"mainnet"}),
}


def monero_b58encode(data: bytes) -> str:
    out = []
    for start in range(0, len(data), _FULL_BLOCK):
        block = data[start:start + _FULL_BLOCK]
        width = _ENCODED_SIZES[len(block)]
        value = int.from_bytes(block, "big")
        chars = []
        for _ in range(width):
            value, digit = divmod(value, 58)
            chars.append(B58_ALPHABET[digit])
        out.append("".join(reversed(chars)))
    return "".join(out)


def monero_b58decode(text: str) -> bytes:
    """Inverse of monero_b58encode; raises AddressError on a bad block."""
    out = bytearray()
    for start in range(0, len(text), _FULL_ENCODED):
        chunk = text[start:start + _FULL_ENCODED]
        size = _DECODED_SIZE.get(len(chunk))
        if size is None:
            raise AddressError("invalid Monero Base58 length")
        value = 0
        for c in chunk:
            digit = _INDEX.get(c)
            if digit is None:
                raise AddressError("contains a character outside the Base58 alphabet")
            value = value * 58 + digit
        if value >> (8 * size):
            raise AddressError("Monero Base58 block overflows its size")
        out += value.to_bytes(size, "big")
    return bytes(out)


@dataclass(frozen=True)
class MoneroAddress:
    """A decoded Monero address."""

    address: str
    network: str  # mainnet, testnet, stagenet
    kind: str  # standard, subaddress, integrated
    spend_key: str  # hex
    view_key: str  # hex
    payment_id: str | None  # hex, integrated addresses only


def decode_xmr(address: object) -> MoneroAddress:
    """Decode and checksum-verify any Monero address of any network."""
    text = clean(address)
    if len(text) not in (95, 106):
        raise AddressError(
            f"Monero address has {len(text)} characters; expected 95 (standard, "
            "subaddress) or 106 (integrated)"
        )
    raw = monero_b58decode(text)
    payload, checksum = raw[:-4], raw[-4:]
    if keccak256(payload)[:4] != checksum:
        raise AddressError("bad Monero checksum")
    info = MONERO_NETWORK_BYTES.get(payload[0])
    if info is None:
        raise AddressError(f"unknown Monero network byte {payload[0]}")
    network, kind = info
    expected = 1 + 64 + (8 if kind == "integrated" else 0)
    if len(payload) != expected:
        raise AddressError(f"a Monero {kind} address has {expected + 4} bytes, not {len(raw)}")
    spend, view = payload[1:33], payload[33:65]
    for key, name in ((spend, "spend"), (view, "view")):
        if not crypto_core_ed25519_is_valid_point(key):
            raise AddressError(f"public {name} key is not a valid ed25519 point")
    return MoneroAddress(
        address=text,
        network=network,
        kind=kind,
        spend_key=spend.hex(),
        view_key=view.hex(),
        payment_id=payload[65:73].hex() if kind == "integrated" else None,
    )


def validate_xmr(address: object, network: str = "mainnet") -> str:
    """Monero destination for a gateway network (mainnet; testnet = testnet or
    stagenet; regtest = mainnet bytes, as monerod's regtest uses them)."""
    accepted = _ACCEPTED.get(network)
    if accepted is None:
        raise AddressError(f"unknown network {network}")
    decoded = decode_xmr(address)
    if decoded.network not in accepted:
        raise AddressError(
            f"a Monero {decoded.network} address, not valid on {network}"
        )
    return decoded.address


def address_family(network: str) -> AddressFamily:
    """The ``xmr`` family: validate only (refund destinations, swap inputs)."""
    return AddressFamily(
        "xmr", network, "Monero (source-only, validate only)", validate_xmr,
        no_derivation_reason="Monero is source-only and has no standing receive address",
    )
