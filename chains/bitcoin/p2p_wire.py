"""The Bitcoin P2P wire format, as much of it as a listening peer needs.

A message is a 24-byte header (network magic, command NUL-padded to 12
bytes, payload length, the first 4 bytes of the payload's double SHA-256)
followed by the payload. This module frames and checks messages and reads
the few payloads the peer acts on (``version``, ``inv``, ``headers``,
``ping``); every check failure is a :class:`WireError`, and the peer ends
the connection on one. Pure functions: no sockets here (``p2p.py`` has them).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Mapping

from ...api.addresses import double_sha256
from .transactions import varint

HEADER_SIZE = 24
# Bitcoin Core's MAX_PROTOCOL_MESSAGE_LENGTH; we never ask for blocks, so what we read is far smaller.
MAX_PAYLOAD = 4_000_000
MAX_INV = 50_000  # Bitcoin Core's MAX_INV_SZ
MAX_HEADERS = 2_000  # Bitcoin Core's MAX_HEADERS_RESULTS
PROTOCOL_VERSION = 70015  # below 70016: no wtxidrelay negotiation, plain MSG_TX announcements
MIN_PEER_VERSION = 31800  # what Bitcoin Core itself accepts

# Network magic ("message start") per coin and network, from each node's chainparams.
# "testnet" is Bitcoin's testnet3, Litecoin's testnet4 and Dogecoin's testnet.
MAGIC: Mapping[tuple[str, str], bytes] = {
    ("BTC", "mainnet"): bytes.fromhex("f9beb4d9"),
    ("BTC", "testnet"): bytes.fromhex("0b110907"),
    ("BTC", "regtest"): bytes.fromhex("fabfb5da"),
    ("LTC", "mainnet"): bytes.fromhex("fbc0b6db"),
    ("LTC", "testnet"): bytes.fromhex("fdd2c8f1"),
    ("LTC", "regtest"): bytes.fromhex("fabfb5da"),
    ("DOGE", "mainnet"): bytes.fromhex("c0c0c0c0"),
    ("DOGE", "testnet"): bytes.fromhex("fcc1b7dc"),
    ("DOGE", "regtest"): bytes.fromhex("fabfb5da"),
}

# Inventory types; the witness (1 << 30) and Litecoin MWEB (1 << 29) flags are stripped before matching.
MSG_TX, MSG_BLOCK, MSG_FILTERED_BLOCK, MSG_CMPCT_BLOCK, MSG_WTX = 1, 2, 3, 4, 5
INV_FLAGS = (1 << 30) | (1 << 29)
TX_TYPES = frozenset({MSG_TX, MSG_WTX})
BLOCK_TYPES = frozenset({MSG_BLOCK, MSG_FILTERED_BLOCK, MSG_CMPCT_BLOCK})


class WireError(Exception):
    """The peer sent something that is not a well-formed message of this network."""


@dataclass(frozen=True)
class Header:
    command: str
    length: int
    checksum: bytes


def checksum(payload: bytes) -> bytes:
    return double_sha256(payload)[:4]


def frame(magic: bytes, command: str, payload: bytes = b"") -> bytes:
    """One message: header and payload."""
    name = command.encode("ascii")
    if len(name) > 12:
        raise ValueError(f"command {command!r} longer than 12 bytes")
    return magic + name.ljust(12, b"\0") + struct.pack("<I", len(payload)) + checksum(payload) + payload


def parse_header(magic: bytes, data: bytes) -> Header:
    """Check a 24-byte header: our network's magic, a printable NUL-padded command, a bounded length."""
    if len(data) != HEADER_SIZE:
        raise WireError("short message header")
    if data[:4] != magic:
        raise WireError(f"wrong network magic {data[:4].hex()} (expected {magic.hex()})")
    raw = data[4:16]
    name, _, padding = raw.partition(b"\0")
    if not name or padding.strip(b"\0") or not all(0x20 < b < 0x7F for b in name):
        raise WireError(f"malformed command {raw!r}")
    (length,) = struct.unpack_from("<I", data, 16)
    if length > MAX_PAYLOAD:
        raise WireError(f"{name.decode()} payload of {length} bytes exceeds {MAX_PAYLOAD}")
    return Header(name.decode("ascii"), length, data[20:24])


def check_payload(header: Header, payload: bytes) -> None:
    if checksum(payload) != header.checksum:
        raise WireError(f"{header.command}: checksum mismatch")


class Reader:
    """Reads a payload front to back; running past its end is a :class:`WireError`."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.offset, self.what = data, 0, what

    def take(self, size: int) -> bytes:
        if self.offset + size > len(self.data):
            raise WireError(f"{self.what}: truncated payload")
        chunk = self.data[self.offset:self.offset + size]
        self.offset += size
        return chunk

    def uint(self, fmt: str) -> int:
        return int(struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0])

    def varint(self) -> int:
        first = self.take(1)[0]
        if first < 0xFD:
            return first
        return self.uint({0xFD: "<H", 0xFE: "<I", 0xFF: "<Q"}[first])

    def count(self, limit: int) -> int:
        n = self.varint()
        if n > limit:
            raise WireError(f"{self.what}: {n} entries exceed {limit}")
        return n


def _net_addr(host: str, port: int) -> bytes:
    """A version message's address without time: services 0, IPv4-mapped IPv6 (or zeros), big-endian port."""
    parts = host.split(".")
    if len(parts) == 4 and all(p.isdigit() and int(p) < 256 for p in parts):
        ip = bytes(10) + b"\xff\xff" + bytes(int(p) for p in parts)
    else:
        ip = bytes(16)
    return struct.pack("<Q", 0) + ip + struct.pack(">H", port)


def version_payload(host: str, port: int, nonce: int, timestamp: int, user_agent: str) -> bytes:
    """Our ``version``: no services offered, height 0, relay=1 (announce transactions to us)."""
    agent = user_agent.encode("ascii")
    return (struct.pack("<iQq", PROTOCOL_VERSION, 0, timestamp) + _net_addr(host, port) + _net_addr("0.0.0.0", 0)
            + struct.pack("<Q", nonce) + varint(len(agent)) + agent + struct.pack("<i", 0) + b"\x01")


def peer_version(payload: bytes) -> int:
    """The protocol version a ``version`` message states; too old or truncated is refused."""
    reader = Reader(payload, "version")
    version = reader.uint("<i")
    reader.take(8 + 8 + 26)  # services, timestamp, addr_recv (the rest is optional in old versions)
    if version < MIN_PEER_VERSION:
        raise WireError(f"peer protocol version {version} is below {MIN_PEER_VERSION}")
    return version


def inventory_kinds(payload: bytes) -> set[str]:
    """``{"tx", "block"}`` or a subset: what an ``inv`` announces (other types are ignored)."""
    reader = Reader(payload, "inv")
    kinds: set[str] = set()
    for _ in range(reader.count(MAX_INV)):
        kind = reader.uint("<I") & ~INV_FLAGS
        reader.take(32)
        if kind in TX_TYPES:
            kinds.add("tx")
        elif kind in BLOCK_TYPES:
            kinds.add("block")
    if reader.offset != len(payload):
        raise WireError("inv: trailing bytes")
    return kinds


def header_count(payload: bytes) -> int:
    """How many block headers a ``headers`` message announces.

    Only the count is read: Dogecoin's merge-mined headers carry AuxPoW data
    after the 80 bytes, so their size varies by coin.
    """
    return Reader(payload, "headers").count(MAX_HEADERS)
