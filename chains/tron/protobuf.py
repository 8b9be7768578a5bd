"""The few protobuf encodings a Tron transaction needs, written out by hand.

Why not generated classes: the gateway signs the SHA-256 of ``raw_data``'s
bytes, so it must know exactly which bytes those are; five messages with
varint and length-delimited fields are clearer as code than as a build step,
and the test node decodes them with classes generated from Tron's own
``.proto`` definitions, which keeps that check independent of this file.

Encoding follows protobuf's canonical form, as java-tron's serializer
writes it: fields in field-number order, proto3 defaults (0, empty) left
out, so the node derives the same bytes (and the same txID) from the JSON
form we send beside them.
"""

from __future__ import annotations

VARINT, LENGTH_DELIMITED = 0, 2


def varint(value: int) -> bytes:
    """Base-128 varint of a non-negative integer (int64 fields never carry negatives here)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise ValueError(f"not an unsigned int64: {value!r}")
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def int_field(number: int, value: int) -> bytes:
    """An int64/enum field; 0 is the default and is not written."""
    return _key(number, VARINT) + varint(value) if value else b""


def bytes_field(number: int, value: bytes) -> bytes:
    """A bytes/string/message field; empty is the default and is not written."""
    return _key(number, LENGTH_DELIMITED) + varint(len(value)) + value if value else b""


def message_field(number: int, value: bytes) -> bytes:
    """An embedded message: written even when empty (presence matters for messages)."""
    return _key(number, LENGTH_DELIMITED) + varint(len(value)) + value
