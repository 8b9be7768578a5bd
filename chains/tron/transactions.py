"""Tron transactions built and signed locally: raw_data bytes, txID, signature, broadcast body.

A transaction is ``Transaction { raw raw_data = 1; repeated bytes signature = 2; }``
(Tron.proto). ``raw`` carries TaPoS (``ref_block_bytes`` = bytes 6..8 of the
reference block's id, i.e. the low two bytes of its number, and
``ref_block_hash`` = bytes 8..16 of its id), ``expiration`` and ``timestamp``
in milliseconds, one ``Contract`` (its type and a ``google.protobuf.Any``
around the contract message) and, for contract calls, ``fee_limit`` in sun.

``txID = SHA-256(raw_data bytes)``; the signature is secp256k1 over the txID,
65 bytes ``r || s || v`` with the recovery id ``v`` in {0, 1} (java-tron
also takes 27/28). coincurve signs (deterministic RFC 6979 nonces).

The broadcast body holds the JSON form java-tron parses (``visible: false``,
41-prefixed hex addresses) and ``raw_data_hex``, both from the same values,
so the node's own serialization yields our txID.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Mapping

from coincurve import PrivateKey

from .protobuf import bytes_field, int_field, message_field

TRANSFER_CONTRACT = ("TransferContract", 1)
TRIGGER_SMART_CONTRACT = ("TriggerSmartContract", 31)
TYPE_URL = "type.googleapis.com/protocol."
# java-tron charges bandwidth for the serialized transaction plus this much per contract result.
RESULT_BYTES = 64


@dataclass(frozen=True)
class RefBlock:
    """The block a transaction refers to (TaPoS) and the time its expiration counts from."""

    number: int
    block_id: str  # 64 hex digits
    timestamp_ms: int

    @property
    def ref_bytes(self) -> bytes:
        return self.number.to_bytes(8, "big")[6:8]

    @property
    def ref_hash(self) -> bytes:
        return bytes.fromhex(self.block_id)[8:16]


@dataclass(frozen=True)
class Call:
    """One contract of a transaction: its type, its message bytes and its JSON ``value``."""

    type_name: str
    type_number: int
    message: bytes
    value: Mapping[str, Any]


def transfer(owner: bytes, to: bytes, amount: int) -> Call:
    """``TransferContract`` (balance_contract.proto): TRX from ``owner`` to ``to`` (21-byte ids)."""
    if amount <= 0:
        raise ValueError("a TRX transfer moves a positive amount")
    message = bytes_field(1, owner) + bytes_field(2, to) + int_field(3, amount)
    return Call(*TRANSFER_CONTRACT, message, {"amount": amount, "owner_address": owner.hex(), "to_address": to.hex()})


def trigger(owner: bytes, contract: bytes, data: bytes) -> Call:
    """``TriggerSmartContract`` (smart_contract.proto) with no call value: a TRC-20 call."""
    message = bytes_field(1, owner) + bytes_field(2, contract) + bytes_field(4, data)
    return Call(*TRIGGER_SMART_CONTRACT, message,
                {"data": data.hex(), "owner_address": owner.hex(), "contract_address": contract.hex()})


@dataclass(frozen=True)
class SignedTx:
    """A signed transaction: its id, the broadcast body (JSON text) and its bandwidth size."""

    tx_id: str
    body: str
    bandwidth: int  # bytes java-tron bills: the serialized transaction plus RESULT_BYTES

    @property
    def payload(self) -> dict[str, Any]:
        return json.loads(self.body)


def raw_data(call: Call, ref: RefBlock, *, expiration_ms: int, timestamp_ms: int, fee_limit: int = 0) -> bytes:
    """``Transaction.raw`` bytes, fields in number order."""
    any_value = bytes_field(1, (TYPE_URL + call.type_name).encode()) + bytes_field(2, call.message)
    contract = int_field(1, call.type_number) + message_field(2, any_value)
    return (bytes_field(1, ref.ref_bytes) + bytes_field(4, ref.ref_hash) + int_field(8, expiration_ms)
            + message_field(11, contract) + int_field(14, timestamp_ms) + int_field(18, fee_limit))


def sign(call: Call, ref: RefBlock, key: bytes, *, expiration_ms: int, timestamp_ms: int,
         fee_limit: int = 0) -> SignedTx:
    """Build ``raw_data``, hash it and sign it with the 32-byte secp256k1 ``key``."""
    raw = raw_data(call, ref, expiration_ms=expiration_ms, timestamp_ms=timestamp_ms, fee_limit=fee_limit)
    tx_id = hashlib.sha256(raw).digest()
    signature = PrivateKey(key).sign_recoverable(tx_id, hasher=None)  # r || s || recovery id
    serialized = message_field(1, raw) + bytes_field(2, signature)
    json_raw: dict[str, Any] = {
        "contract": [{"parameter": {"value": dict(call.value), "type_url": TYPE_URL + call.type_name},
                      "type": call.type_name}],
        "ref_block_bytes": ref.ref_bytes.hex(), "ref_block_hash": ref.ref_hash.hex(),
        "expiration": expiration_ms, "timestamp": timestamp_ms,
    }
    if fee_limit:
        json_raw["fee_limit"] = fee_limit
    body = {"visible": False, "txID": tx_id.hex(), "raw_data": json_raw, "raw_data_hex": raw.hex(),
            "signature": [signature.hex()]}
    return SignedTx(tx_id.hex(), json.dumps(body, sort_keys=True, separators=(",", ":")),
                    len(serialized) + RESULT_BYTES)


def bandwidth_of(call: Call, ref: RefBlock, *, expiration_ms: int, timestamp_ms: int, fee_limit: int = 0) -> int:
    """The bandwidth a transaction of this shape bills, before it is signed (signatures are 65 bytes)."""
    raw = raw_data(call, ref, expiration_ms=expiration_ms, timestamp_ms=timestamp_ms, fee_limit=fee_limit)
    return len(message_field(1, raw) + bytes_field(2, bytes(65))) + RESULT_BYTES
