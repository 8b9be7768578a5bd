"""Bitcoin-family transactions: scripts, serialisation, sighashes and signing.

The gateway signs its own payouts (the node's wallet is never used), so this
module builds version-2 transactions spending two kinds of input:

* P2WPKH (BTC, LTC): BIP-143 signature hash, signature and public key in the
  witness, empty scriptSig; serialised with the BIP-144 marker and flag.
* P2PKH (DOGE): the legacy signature hash (the input's scriptSig replaced by
  the spent scriptPubKey, every other scriptSig emptied), signature and
  public key in the scriptSig; no witness.

Signatures are SIGHASH_ALL, DER, low-S (libsecp256k1 through coincurve
produces low-S and RFC 6979 deterministic nonces). Sizes for fee estimation
assume the longest possible DER signature (72 bytes with the hash type), so
the real transaction is never larger than estimated.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Sequence

from coincurve import PrivateKey

from ...api.addresses import b58check_decode, double_sha256, hash160
from .doge import DOGE_VERSIONS
from .segwit import HRPS, decode_segwit

SIGHASH_ALL = 1
TX_VERSION = 2
# Final, no replace-by-fee signal: a payout is never replaced, only re-broadcast.
SEQUENCE_FINAL = 0xFFFFFFFE
# BIP 125: any input's nSequence below 0xfffffffe signals that the spender may replace the transaction by fee.
SEQUENCE_RBF = 0xFFFFFFFD
MAX_DER_SIGNATURE = 72  # DER (at most 71) plus the sighash byte


# -- scripts --------------------------------------------------------------------------------------


def p2wpkh_script(pubkey_hash: bytes) -> bytes:
    return b"\x00\x14" + pubkey_hash


def p2pkh_script(pubkey_hash: bytes) -> bytes:
    return b"\x76\xa9\x14" + pubkey_hash + b"\x88\xac"


def p2sh_script(script_hash: bytes) -> bytes:
    return b"\xa9\x14" + script_hash + b"\x87"


def witness_script(version: int, program: bytes) -> bytes:
    op = 0 if version == 0 else 0x50 + version
    return bytes([op, len(program)]) + program


def script_for_address(family: str, network: str, address: str) -> bytes:
    """The scriptPubKey paying ``address`` (already validated by the key layer).

    BTC/LTC: any segwit v0/v1 address; DOGE: P2PKH or P2SH.
    """
    if family in HRPS:
        version, program = decode_segwit(address, HRPS[family][network])
        return witness_script(version, program)
    if family == "doge":
        payload = b58check_decode(address, 21)
        p2pkh, p2sh = DOGE_VERSIONS[network]
        if payload[0] == p2pkh:
            return p2pkh_script(payload[1:])
        if payload[0] == p2sh:
            return p2sh_script(payload[1:])
        raise ValueError("not a Dogecoin address of this network")
    raise ValueError(f"no script for address family {family!r}")


def script_for_key(kind: str, public_key: bytes) -> bytes:
    """The scriptPubKey of one of our own keys: ``kind`` is "p2wpkh" or "p2pkh"."""
    return p2wpkh_script(hash160(public_key)) if kind == "p2wpkh" else p2pkh_script(hash160(public_key))


# -- serialisation --------------------------------------------------------------------------------


def varint(n: int) -> bytes:
    if n < 0xFD:
        return bytes([n])
    if n <= 0xFFFF:
        return b"\xfd" + struct.pack("<H", n)
    if n <= 0xFFFFFFFF:
        return b"\xfe" + struct.pack("<I", n)
    return b"\xff" + struct.pack("<Q", n)


def push(data: bytes) -> bytes:
    """A minimal data push (our pushes are signatures and keys: under 76 bytes)."""
    if len(data) >= 0x4C:
        raise ValueError("push too long for a direct push")
    return bytes([len(data)]) + data


@dataclass(frozen=True)
class Outpoint:
    tx_hash: str  # txid as the node shows it (big-endian hex)
    index: int

    def serialize(self) -> bytes:
        return bytes.fromhex(self.tx_hash)[::-1] + struct.pack("<I", self.index)


@dataclass(frozen=True)
class Spend:
    """An input to sign: what it spends and the key that owns it."""

    outpoint: Outpoint
    amount: int
    kind: str  # "p2wpkh" or "p2pkh"
    private_key: bytes

    def __repr__(self) -> str:  # never the key
        return f"<Spend {self.outpoint.tx_hash}:{self.outpoint.index} {self.amount} {self.kind}>"

    @property
    def public_key(self) -> bytes:
        return PrivateKey(self.private_key).public_key.format(compressed=True)


@dataclass(frozen=True)
class Output:
    amount: int
    script: bytes

    def serialize(self) -> bytes:
        return struct.pack("<q", self.amount) + varint(len(self.script)) + self.script


@dataclass(frozen=True)
class SignedTransaction:
    txid: str
    raw: bytes
    vsize: int

    @property
    def hex(self) -> str:
        return self.raw.hex()


def _serialize(
    version: int, inputs: Sequence[tuple[Outpoint, bytes]], outputs: Sequence[Output], locktime: int,
    witnesses: Sequence[Sequence[bytes]] | None = None, sequence: int = SEQUENCE_FINAL,
) -> bytes:
    parts = [struct.pack("<i", version)]
    if witnesses is not None:
        parts.append(b"\x00\x01")  # BIP-144 marker and flag
    parts.append(varint(len(inputs)))
    for outpoint, script_sig in inputs:
        parts += [outpoint.serialize(), varint(len(script_sig)), script_sig, struct.pack("<I", sequence)]
    parts.append(varint(len(outputs)))
    parts += [o.serialize() for o in outputs]
    if witnesses is not None:
        for stack in witnesses:
            parts.append(varint(len(stack)))
            parts += [varint(len(item)) + item for item in stack]
    parts.append(struct.pack("<I", locktime))
    return b"".join(parts)


# -- signature hashes -----------------------------------------------------------------------------


def bip143_sighash(
    spends: Sequence[Spend], outputs: Sequence[Output], index: int, *, version: int = TX_VERSION, locktime: int = 0,
    sequence: int = SEQUENCE_FINAL,
) -> bytes:
    """BIP-143 (segwit v0) SIGHASH_ALL digest for input ``index`` spending P2WPKH."""
    spend = spends[index]
    hash_prevouts = double_sha256(b"".join(s.outpoint.serialize() for s in spends))
    hash_sequence = double_sha256(struct.pack("<I", sequence) * len(spends))
    hash_outputs = double_sha256(b"".join(o.serialize() for o in outputs))
    script_code = p2pkh_script(hash160(spend.public_key))  # P2WPKH's scriptCode
    preimage = b"".join((
        struct.pack("<i", version), hash_prevouts, hash_sequence, spend.outpoint.serialize(),
        varint(len(script_code)), script_code, struct.pack("<q", spend.amount), struct.pack("<I", sequence),
        hash_outputs, struct.pack("<I", locktime), struct.pack("<I", SIGHASH_ALL),
    ))
    return double_sha256(preimage)


def legacy_sighash(
    spends: Sequence[Spend], outputs: Sequence[Output], index: int, *, version: int = TX_VERSION, locktime: int = 0,
    sequence: int = SEQUENCE_FINAL,
) -> bytes:
    """Pre-segwit SIGHASH_ALL digest for input ``index`` spending P2PKH."""
    inputs = [(s.outpoint, p2pkh_script(hash160(s.public_key)) if i == index else b"") for i, s in enumerate(spends)]
    return double_sha256(_serialize(version, inputs, outputs, locktime, sequence=sequence)
                         + struct.pack("<I", SIGHASH_ALL))


def _signature(private_key: bytes, digest: bytes) -> bytes:
    return PrivateKey(private_key).sign(digest, hasher=None) + bytes([SIGHASH_ALL])


def sign_transaction(spends: Sequence[Spend], outputs: Sequence[Output], *, locktime: int = 0,
                     sequence: int = SEQUENCE_FINAL) -> SignedTransaction:
    """Sign every input; the result is ready for ``sendrawtransaction``.

    ``sequence`` (every input's) stays final unless the caller signals
    replaceability (BIP 125: below ``SEQUENCE_FINAL``), as a payer's wallet may.
    """
    if not spends or not outputs:
        raise ValueError("a transaction needs inputs and outputs")
    segwit = any(s.kind == "p2wpkh" for s in spends)
    inputs: list[tuple[Outpoint, bytes]] = []
    witnesses: list[list[bytes]] = []
    fields = {"locktime": locktime, "sequence": sequence}
    for i, spend in enumerate(spends):
        if spend.kind == "p2wpkh":
            sig = _signature(spend.private_key, bip143_sighash(spends, outputs, i, **fields))
            inputs.append((spend.outpoint, b""))
            witnesses.append([sig, spend.public_key])
        elif spend.kind == "p2pkh":
            sig = _signature(spend.private_key, legacy_sighash(spends, outputs, i, **fields))
            inputs.append((spend.outpoint, push(sig) + push(spend.public_key)))
            witnesses.append([])
        else:
            raise ValueError(f"cannot sign a {spend.kind!r} input")
    stripped = _serialize(TX_VERSION, inputs, outputs, locktime, sequence=sequence)
    raw = _serialize(TX_VERSION, inputs, outputs, locktime, witnesses, sequence=sequence) if segwit else stripped
    weight = len(stripped) * 3 + len(raw)
    return SignedTransaction(double_sha256(stripped)[::-1].hex(), raw, (weight + 3) // 4)


# -- sizes for fee estimation ----------------------------------------------------------------------

# Non-witness bytes of an input: outpoint 36 + script length 1 + sequence 4 (+ the scriptSig).
_INPUT_BASE = 41
_P2PKH_SCRIPT_SIG = 1 + MAX_DER_SIGNATURE + 1 + 33
_P2WPKH_WITNESS = 1 + 1 + MAX_DER_SIGNATURE + 1 + 33


def estimate_vsize(input_kinds: Sequence[str], output_scripts: Sequence[bytes]) -> int:
    """Upper bound of the signed transaction's virtual size (BIP-141 weight / 4, rounded up)."""
    base = 4 + 4 + len(varint(len(input_kinds))) + len(varint(len(output_scripts)))
    base += sum(8 + len(varint(len(s))) + len(s) for s in output_scripts)
    witness = 0
    for kind in input_kinds:
        if kind == "p2wpkh":
            base += _INPUT_BASE
            witness += _P2WPKH_WITNESS
        else:
            base += _INPUT_BASE + _P2PKH_SCRIPT_SIG
            witness += 1  # an empty stack, when other inputs are segwit
    if "p2wpkh" in input_kinds:
        witness += 2  # marker and flag
    else:
        witness = 0
    return (base * 4 + witness + 3) // 4


def input_vsize(kind: str) -> int:
    """Virtual bytes one more input of ``kind`` adds (rounded up)."""
    return (_INPUT_BASE * 4 + _P2WPKH_WITNESS + 3) // 4 if kind == "p2wpkh" else _INPUT_BASE + _P2PKH_SCRIPT_SIG
