"""Solana's wire format for the one transaction the gateway sends: a signed system transfer with a priority fee.

Why by hand and not with a client library: a legacy message holding two
Compute Budget instructions (the unit limit and the unit price: the
priority fee, ``fees.py``) and one ``SystemProgram::Transfer`` is a fixed
layout of about two hundred bytes (Solana's
"Transactions" documentation: compact-u16 lengths, a three-byte header,
account keys, recent blockhash, compiled instructions), and signing it is
one ed25519 signature with PyNaCl, which the gateway already uses. Writing
it here keeps production free of a large native dependency and lets the
test stand-in judge our bytes with the real runtime (``solders.litesvm``),
whose decoder shares nothing with this module.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import base58
from nacl.signing import SigningKey

SYSTEM_PROGRAM = bytes(32)  # 11111111111111111111111111111111
COMPUTE_BUDGET_PROGRAM = base58.b58decode("ComputeBudget111111111111111111111111111111")
TRANSFER_INSTRUCTION = 2  # SystemInstruction::Transfer { lamports: u64 }
SET_COMPUTE_UNIT_LIMIT = 2  # ComputeBudgetInstruction::SetComputeUnitLimit(u32)
SET_COMPUTE_UNIT_PRICE = 3  # ComputeBudgetInstruction::SetComputeUnitPrice(u64): micro-lamports per unit
# The units a transfer asks for: the runtime charges price x limit (not x units used), and runs out at the limit.
# It uses 450 (150 for each instruction, Compute Budget ones included): 1,000 leaves room for a costlier runtime
# at a price of at most 1,000 x the unit price in micro-lamports (docs/decisions.md).
TRANSFER_COMPUTE_UNITS = 1_000


def shortvec(value: int) -> bytes:
    """compact-u16: 7 bits per byte, high bit set while more bytes follow."""
    if not 0 <= value <= 0xFFFF:
        raise ValueError(f"compact-u16 out of range: {value}")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def pubkey(address: str) -> bytes:
    raw = base58.b58decode(address)
    if len(raw) != 32:
        raise ValueError(f"not a 32-byte Solana address: {address!r}")
    return raw


def transfer_message(payer: str, recipient: str, lamports: int, recent_blockhash: str, unit_price: int) -> bytes:
    """A legacy message: ``payer`` (signer, writable, fee payer) sends ``lamports`` to ``recipient``.

    ``unit_price`` is the priority fee in micro-lamports per compute unit, for ``TRANSFER_COMPUTE_UNITS``.
    """
    if payer == recipient:
        raise ValueError("a transfer to the fee payer itself moves nothing")
    if not 0 < lamports < 2**64:
        raise ValueError(f"lamports out of range: {lamports}")
    if not 0 <= unit_price < 2**64:
        raise ValueError(f"compute unit price out of range: {unit_price}")
    # Header: 1 required signature, 0 read-only signed, 2 read-only unsigned (the two programs, in the order
    # Solana's compiler sorts read-only keys: by their bytes, the System Program's zeros first).
    keys = pubkey(payer) + pubkey(recipient) + SYSTEM_PROGRAM + COMPUTE_BUDGET_PROGRAM
    instructions = (
        _instruction(3, b"", bytes([SET_COMPUTE_UNIT_LIMIT]) + TRANSFER_COMPUTE_UNITS.to_bytes(4, "little"))
        + _instruction(3, b"", bytes([SET_COMPUTE_UNIT_PRICE]) + unit_price.to_bytes(8, "little"))
        + _instruction(2, bytes([0, 1]), TRANSFER_INSTRUCTION.to_bytes(4, "little") + lamports.to_bytes(8, "little")))
    return bytes([1, 0, 2]) + shortvec(4) + keys + pubkey(recent_blockhash) + shortvec(3) + instructions


def _instruction(program: int, accounts: bytes, data: bytes) -> bytes:
    """A compiled instruction: the program's key index, its accounts' key indexes, its data."""
    return bytes([program]) + shortvec(len(accounts)) + accounts + shortvec(len(data)) + data


@dataclass(frozen=True)
class SignedTransfer:
    signature: str  # base58: the transaction id
    raw: str  # base64 of the wire transaction, as sendTransaction takes it


def sign(message: bytes, seed: bytes) -> SignedTransfer:
    """Sign ``message`` with the ed25519 key of ``seed`` (its fee payer)."""
    signature = SigningKey(seed).sign(message).signature
    wire = shortvec(1) + signature + message
    return SignedTransfer(base58.b58encode(signature).decode("ascii"), base64.b64encode(wire).decode("ascii"))


def address_of(seed: bytes) -> str:
    return base58.b58encode(bytes(SigningKey(seed).verify_key)).decode("ascii")


def encode_message(message: bytes) -> str:
    """A message as getFeeForMessage takes it (base64)."""
    return base64.b64encode(message).decode("ascii")


def blockhash_of(raw: str) -> str:
    """The recent blockhash a signed transfer of this module was built on (for expiry checks)."""
    wire = base64.b64decode(raw)
    keys = wire[1 + 64 + 3]  # one signature, the header; fewer than 128 keys: a one-byte count
    offset = 1 + 64 + 3 + 1 + keys * 32
    return base58.b58encode(wire[offset:offset + 32]).decode("ascii")
