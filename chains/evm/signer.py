"""EIP-1559 (type-2) transactions: fees, gas, nonces, sign-then-store, broadcast.

Every transaction the gateway signs on an EVM chain goes through
:meth:`TxStore.sign_and_store`: the nonce is allocated and the signed bytes
are written to ``evm_txs`` in ONE database transaction, before anything is
broadcast. Asking again for the same (kind, ref) returns the stored row, so
a crash between signing and broadcasting re-sends the same bytes and never
signs the same payout with a second nonce.

Nonces: ``evm_nonces`` holds the next nonce per sender and is read under a
row lock, so concurrent payouts (also from several processes on PostgreSQL)
get distinct nonces; the node's ``eth_getTransactionCount(addr, "pending")``
is only a floor (someone else used the key, or the table is new). A
transaction the node refused for good is ``abandoned``; its nonce is handed
to the next transaction so later ones are not stuck behind a gap.

Signing uses eth-account (``Account.sign_transaction`` with a type-2 dict):
a well-kept library does RLP and the secp256k1 signature better than
hand-written code.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from eth_utils import to_checksum_address

from ...api import BroadcastError, ChainUnavailable, FeeAboveCeiling, PayoutStatus, SignedPayout
from . import versions
from .eth_account_import import Account  # not eth_account: that import raises the recursion limit
from .rpc import JsonRpc, RpcError, hex_quantity, quantity

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger(__name__)

NATIVE_TRANSFER_GAS = 21_000
GWEI = 10**9
# Errors that mean "the node already has (or mined) exactly this transaction".
_ALREADY_KNOWN = ("already known", "known transaction", "already imported", "alreadyknown",
                  "transaction already exists")
# Refusals of bytes priced below the block's base fee: final for bytes never sent, not for ones a node took
# (a re-signing at their nonce, or a lower base fee, can still get them mined).
PRICED_OUT = ("max fee per gas less than", "fee cap less than")
# Refusals no retry can cure: the bytes can never be mined as they are.
_PERMANENT = ("nonce too low", "insufficient funds", "intrinsic gas too low", "invalid sender",
              "exceeds block gas limit", "invalid chain id", "gas limit reached", *PRICED_OUT,
              "only replay-protected", "oversized data", "transaction type not supported")


REPLACEMENT_BUMP_PERCENT = 10  # geth's (and anvil's) least fee rise for a transaction at a taken nonce


def bumped(wei: int) -> int:
    """The least fee a replacement at a taken nonce may sign: 10 % more, rounded up, plus one wei."""
    return wei + -(-wei * REPLACEMENT_BUMP_PERCENT // 100) + 1


@dataclass(frozen=True)
class Fees:
    max_fee_per_gas: int
    max_priority_fee_per_gas: int


@dataclass(frozen=True)
class StoredTx:
    """A row of ``evm_txs``: a signed transaction and what it is for."""

    id: str
    kind: str
    ref: str
    sender: str
    nonce: int
    recipient: str
    coin: str
    amount: int
    tx_hash: str
    raw: str
    gas_limit: int
    max_fee_per_gas: int
    status: str
    signed_height: int | None = None  # the tip when it was signed (None: signed before versions were kept)

    @property
    def max_network_fee(self) -> int:
        """The most this transaction can cost in gas (wei): gas limit × max fee."""
        return self.gas_limit * self.max_fee_per_gas


def _stored(gateway: "Gateway", row: Mapping[str, Any]) -> StoredTx:
    to_int = gateway.db.to_int
    return StoredTx(row["id"], row["kind"], row["ref"], row["sender"], int(row["nonce"]), row["recipient"],
                    row["coin"], to_int(row["amount"]), row["tx_hash"], row["raw"], int(row["gas_limit"]),
                    to_int(row["max_fee_per_gas"]), row["status"],
                    None if row["signed_height"] is None else int(row["signed_height"]))


class TxStore:
    """Signs, stores, broadcasts and follows one chain's transactions."""

    def __init__(self, gateway: "Gateway", chain: str, chain_id: int, rpc: JsonRpc, *,
                 gas_margin_percent: int = 20, priority_fee_wei: int | None = None,
                 fee_ceiling_wei: int | None = None) -> None:
        self.gateway, self.chain, self.chain_id, self.rpc = gateway, chain, chain_id, rpc
        self.gas_margin_percent = gas_margin_percent
        self.priority_fee_wei = priority_fee_wei
        self.fee_ceiling_wei = fee_ceiling_wei

    # -- fees and gas ---------------------------------------------------------------------

    async def fees(self) -> Fees:
        """maxFee = 2 × next base fee + tip: stays valid through six full blocks of base-fee rises."""
        next_base, tip = await self.market()
        return Fees(2 * next_base + tip, tip)

    async def payout_fees(self) -> Fees:
        """``fees()`` under the operator's ceiling (``fee_ceiling_gwei``).

        maxFee is capped at the ceiling (less headroom against base-fee rises,
        never more than the operator allows); when the next base fee plus the
        tip is already above it, ``FeeAboveCeiling``: the payout waits.
        """
        next_base, tip = await self.market()
        ceiling = self.fee_ceiling_wei
        if ceiling is not None and next_base + tip > ceiling:
            raise FeeAboveCeiling(gwei(next_base + tip), gwei(ceiling), "gwei")
        max_fee = 2 * next_base + tip
        return Fees(max_fee if ceiling is None else min(max_fee, ceiling), tip)

    async def market(self) -> tuple[int, int]:
        """(next base fee, tip) in wei per gas."""
        history = await self.rpc.call("eth_feeHistory", hex_quantity(4), "latest", [50])
        base_fees = history.get("baseFeePerGas") or []
        if not base_fees:
            raise ChainUnavailable("eth_feeHistory without baseFeePerGas: the chain lacks EIP-1559")
        next_base = quantity(base_fees[-1])
        tip = self.priority_fee_wei
        if tip is None:
            try:
                tip = quantity(await self.rpc.call("eth_maxPriorityFeePerGas"))
            except RpcError:  # not every node has it: the median tip of recent blocks
                rewards = sorted(quantity(r[0]) for r in history.get("reward") or [] if r)
                tip = rewards[len(rewards) // 2] if rewards else 0
        return next_base, tip

    async def estimate_gas(self, sender: str, to: str, value: int, data: str) -> int:
        """``eth_estimateGas`` plus the configured margin; a plain transfer is exactly 21,000."""
        if data == "0x":
            code = await self.rpc.call("eth_getCode", to, "latest")
            if code in ("0x", "0x0", None):
                return NATIVE_TRANSFER_GAS
        try:
            # Against "latest": our own transactions waiting in the mempool do not count.
            estimate = quantity(await self.rpc.call(
                "eth_estimateGas", {"from": sender, "to": to, "value": hex_quantity(value), "data": data}, "latest"))
        except RpcError as exc:
            # Would revert now (token balance still arriving, a paused contract ...): retried later.
            raise BroadcastError(f"gas estimate failed: {exc.message}", permanent=False) from None
        return estimate + estimate * self.gas_margin_percent // 100

    # -- sign and store -------------------------------------------------------------------

    async def owner(self, tx_hash: str) -> StoredTx | None:
        """The stored transaction ``tx_hash`` is a version of (its first signing or a re-signing), or None."""
        row = await self.gateway.db.fetch_one("SELECT * FROM evm_txs WHERE chain = :c AND tx_hash = :h",
                                              {"c": self.chain, "h": tx_hash})
        if row is None:
            tx_id = await versions.owner_id(self.gateway, self.chain, tx_hash)
            if tx_id is not None:
                row = await self.gateway.db.fetch_one("SELECT * FROM evm_txs WHERE id = :id", {"id": tx_id})
        return None if row is None else _stored(self.gateway, row)

    async def versions(self, stored: StoredTx) -> list[versions.Version]:
        return await versions.versions_of(self.gateway, stored)

    async def _hashes(self, tx_hash: str) -> tuple[StoredTx | None, list[str]]:
        """The owner of ``tx_hash`` and every version's hash, oldest first (``[tx_hash]`` for a stranger)."""
        owner = await self.owner(tx_hash)
        if owner is None:
            return None, [tx_hash]
        return owner, [v.tx_hash for v in await self.versions(owner)]

    async def find(self, kind: str, ref: str) -> StoredTx | None:
        row = await self.gateway.db.fetch_one(
            "SELECT * FROM evm_txs WHERE chain = :c AND kind = :k AND ref = :r", {"c": self.chain, "k": kind, "r": ref})
        return None if row is None else _stored(self.gateway, row)

    async def sign_and_store(self, *, kind: str, ref: str, key: bytes, to: str, value: int, data: str = "0x",
                             coin: str, amount: int, gas_limit: int | None = None, fees: Fees | None = None,
                             value_after_fees: bool = False, under_ceiling: bool = False) -> StoredTx:
        """Sign one transaction from ``key``'s address and store it; idempotent by (kind, ref).

        ``value_after_fees``: send ``value`` minus the gas bound (sweeping a
        whole native balance). Chain calls happen before the database
        transaction; the nonce is taken inside it. ``under_ceiling``: a
        payout's fees (``payout_fees``: may raise ``FeeAboveCeiling``).
        """
        existing = await self.find(kind, ref)
        if existing is not None:
            return existing
        sender = Account.from_key(key).address
        to = to_checksum_address(to)
        fees = fees or await (self.payout_fees() if under_ceiling else self.fees())
        gas = gas_limit or await self.estimate_gas(sender, to, value, data)
        if value_after_fees:
            value -= gas * fees.max_fee_per_gas
            amount = value
            if value <= 0:
                raise BroadcastError("balance does not cover the gas", permanent=False)
        counts = await self.rpc.batch([("eth_getTransactionCount", [sender, "latest"]),
                                       ("eth_getTransactionCount", [sender, "pending"]), ("eth_blockNumber", [])])
        mined_count, pending_count, height = quantity(counts[0]), quantity(counts[1]), quantity(counts[2])
        db = self.gateway.db
        async with db.transaction():
            next_nonce = await self.lock_sender(sender)
            again = await self.find(kind, ref)  # a concurrent twin won while we asked the node
            if again is not None:
                return again
            nonce = await self._allocate_nonce(sender, next_nonce, mined_count, pending_count)
            signed = Account.sign_transaction({
                "type": 2, "chainId": self.chain_id, "nonce": nonce, "to": to, "value": value, "data": data,
                "gas": gas, "maxFeePerGas": fees.max_fee_per_gas,
                "maxPriorityFeePerGas": fees.max_priority_fee_per_gas,
            }, key)
            now = self.gateway.now()
            row = {
                "id": "etx_" + secrets.token_hex(10), "chain": self.chain, "kind": kind, "ref": ref, "sender": sender,
                "nonce": nonce, "recipient": to, "coin": coin, "amount": db.amount_param(amount),
                "tx_hash": "0x" + bytes(signed.hash).hex(), "raw": "0x" + bytes(signed.raw_transaction).hex(),
                "gas_limit": gas, "max_fee_per_gas": db.amount_param(fees.max_fee_per_gas), "status": "stored",
                "signed_height": height, "created_at": now, "updated_at": now,
            }
            await db.execute(f"INSERT INTO evm_txs ({', '.join(row)}) VALUES ({', '.join(':' + k for k in row)})", row)
        log.info("%s: signed %s %s nonce %d from %s", self.chain, kind, row["tx_hash"], nonce, sender)
        stored = await self.find(kind, ref)
        assert stored is not None, "inserted just above, and evm_txs rows are never deleted"
        return stored

    async def sign_replacement(self, original: StoredTx, *, kind: str, ref: str, key: bytes) -> StoredTx:
        """Sign and store a zero-value self-transfer at ``original``'s nonce, to take its place; idempotent.

        Its fees beat the original's by the replacement minimum nodes ask
        (``REPLACEMENT_BUMP``: geth's 10 %, rounded up) and are at least the
        current ones. In the same database transaction the original becomes
        ``abandoned`` (one live transaction per nonce), which never frees the
        nonce: the replacement holds it.
        """
        existing = await self.find(kind, ref)
        if existing is not None:
            return existing
        current = await self.fees()
        newest = (await self.versions(original))[-1]  # it must beat the highest fees signed at that nonce
        tip = max(current.max_priority_fee_per_gas, bumped(newest.max_priority_fee_per_gas))
        max_fee = max(current.max_fee_per_gas, bumped(newest.max_fee_per_gas), tip)
        signed = Account.sign_transaction({
            "type": 2, "chainId": self.chain_id, "nonce": original.nonce, "to": original.sender, "value": 0,
            "data": "0x", "gas": NATIVE_TRANSFER_GAS, "maxFeePerGas": max_fee, "maxPriorityFeePerGas": tip,
        }, key)
        db = self.gateway.db
        async with db.transaction():
            await self.lock_sender(original.sender)
            again = await self.find(kind, ref)
            if again is not None:
                return again
            await self.abandon(original.tx_hash)
            now = self.gateway.now()
            row = {
                "id": "etx_" + secrets.token_hex(10), "chain": self.chain, "kind": kind, "ref": ref,
                "sender": original.sender, "nonce": original.nonce, "recipient": original.sender,
                "coin": original.coin, "amount": db.amount_param(0), "tx_hash": "0x" + bytes(signed.hash).hex(),
                "raw": "0x" + bytes(signed.raw_transaction).hex(), "gas_limit": NATIVE_TRANSFER_GAS,
                "max_fee_per_gas": db.amount_param(max_fee), "status": "stored", "created_at": now,
                "updated_at": now,
            }
            await db.execute(f"INSERT INTO evm_txs ({', '.join(row)}) VALUES ({', '.join(':' + k for k in row)})", row)
        log.info("%s: signed %s %s at nonce %d in place of %s", self.chain, kind, row["tx_hash"], original.nonce,
                 original.tx_hash)
        stored = await self.find(kind, ref)
        assert stored is not None, "inserted just above, and evm_txs rows are never deleted"
        return stored

    async def confirmed_count(self, sender: str, confirmations: int) -> int | None:
        """How many of ``sender``'s transactions are at least ``confirmations`` deep; None before that many blocks."""
        tip = quantity(await self.rpc.call("eth_blockNumber"))
        deep = tip - max(1, confirmations) + 1
        if deep < 0:
            return None
        return quantity(await self.rpc.call("eth_getTransactionCount", sender, hex_quantity(deep)))

    async def lock_sender(self, sender: str) -> int:
        """Inside the caller's transaction: lock the sender's nonce row; returns its next nonce."""
        db = self.gateway.db
        await db.execute("INSERT INTO evm_nonces (chain, address, next_nonce) VALUES (:c, :a, 0)"
                         " ON CONFLICT (chain, address) DO NOTHING", {"c": self.chain, "a": sender})
        return int(await db.fetch_val(
            f"SELECT next_nonce FROM evm_nonces WHERE chain = :c AND address = :a{db.for_update}",
            {"c": self.chain, "a": sender}))

    async def _allocate_nonce(self, sender: str, next_nonce: int, mined_count: int, pending_count: int) -> int:
        """Under the sender's lock: the lowest reusable nonce, else the next one."""
        db = self.gateway.db
        # A nonce whose transaction the node refused (and nothing else holds) is reused first.
        gap = await db.fetch_val(
            "SELECT MIN(a.nonce) FROM evm_txs a WHERE a.chain = :c AND a.sender = :s AND a.status = 'abandoned'"
            " AND a.nonce >= :mined AND a.nonce < :next AND NOT EXISTS (SELECT 1 FROM evm_txs b WHERE b.chain = a.chain"
            " AND b.sender = a.sender AND b.nonce = a.nonce AND b.status <> 'abandoned')",
            {"c": self.chain, "s": sender, "mined": mined_count, "next": next_nonce})
        if gap is not None:
            return int(gap)
        nonce = max(next_nonce, pending_count)
        await db.execute("UPDATE evm_nonces SET next_nonce = :n WHERE chain = :c AND address = :a",
                         {"n": nonce + 1, "c": self.chain, "a": sender})
        return nonce

    # -- broadcast and status --------------------------------------------------------------

    async def _set_status(self, tx_hash: str, status: str, **extra: Any) -> None:
        values = {"s": status, "h": tx_hash, "c": self.chain, "now": self.gateway.now(), **extra}
        sets = "".join(f", {k} = :{k}" for k in extra)
        await self.gateway.db.execute(
            f"UPDATE evm_txs SET status = :s, updated_at = :now{sets} WHERE chain = :c AND tx_hash = :h"
            " AND status <> 'abandoned'", values)

    async def broadcast(self, tx_hash: str, raw: str) -> None:
        """Send the newest version of a stored transaction (any version's hash names it); repeating it is harmless.

        Raises ``BroadcastError``. A transaction re-signed at its nonce
        (``bumping.py``) is offered as its newest signing: the older ones
        would only be refused as underpriced.
        """
        owner, hashes = await self._hashes(tx_hash)
        first = tx_hash
        if owner is not None:
            newest = (await self.versions(owner))[-1]
            first, tx_hash, raw = owner.tx_hash, newest.tx_hash, newest.raw
        try:
            answer = await self.rpc.call("eth_sendRawTransaction", raw)
        except RpcError as exc:
            text = exc.message.lower()
            if any(marker in text for marker in _ALREADY_KNOWN):
                answer = tx_hash
            elif await self.known_any(hashes):
                answer = tx_hash  # "nonce too low" because this very transaction (a version of it) was mined
            elif any(marker in text for marker in _PERMANENT):
                # Only bytes no node ever accepted free their nonce: once sent, a copy elsewhere may still be mined.
                await self.abandon_unsent(first)
                raise BroadcastError(exc.message, permanent=True) from None
            else:
                raise BroadcastError(exc.message, permanent=False) from None
        except ChainUnavailable as exc:
            raise BroadcastError(str(exc), permanent=False) from None
        if isinstance(answer, str) and answer.lower() != tx_hash.lower():
            raise BroadcastError(f"node reports hash {answer} for {tx_hash}", permanent=True)
        await self.gateway.db.execute(
            "UPDATE evm_txs SET status = 'broadcast', updated_at = :now WHERE chain = :c AND tx_hash = :h"
            " AND status = 'stored'", {"c": self.chain, "h": first, "now": self.gateway.now()})

    async def abandon_unsent(self, tx_hash: str) -> None:
        """Give up a stored transaction that was never sent (its nonce becomes reusable)."""
        await self.abandon(tx_hash, statuses=("stored",))

    async def abandon(self, tx_hash: str, statuses: tuple[str, ...] = ("stored", "broadcast")) -> None:
        """Give up a transaction the node does not have; its nonce is reused next."""
        await self.gateway.db.execute(
            "UPDATE evm_txs SET status = 'abandoned', updated_at = :now WHERE chain = :c AND tx_hash = :h"
            f" AND status IN ({', '.join(repr(s) for s in statuses)})",
            {"c": self.chain, "h": tx_hash, "now": self.gateway.now()})

    async def known(self, tx_hash: str) -> bool:
        return await self.rpc.call("eth_getTransactionByHash", tx_hash) is not None

    async def known_any(self, hashes: list[str]) -> bool:
        """Does the node have any of these versions (newest first: the likeliest in its pool)?"""
        for tx_hash in reversed(hashes):
            if await self.known(tx_hash):
                return True
        return False

    async def status(self, tx_hash: str) -> tuple[PayoutStatus, Mapping[str, Any] | None]:
        """Where the transaction ``tx_hash`` names stands on the best chain, and its receipt when mined.

        Every version of it is asked about (they share a nonce: at most one is
        mined); the status names the mined one in ``mined`` when it is not the
        one asked about, so the payout ends showing what was really mined.
        """
        owner = await self.owner(tx_hash)
        known = await self.versions(owner) if owner is not None else []
        hashes = [v.tx_hash for v in known] or [tx_hash]
        *receipts, tip = await self.rpc.batch([*(("eth_getTransactionReceipt", [h]) for h in hashes),
                                               ("eth_blockNumber", [])])
        for index, (mined_hash, receipt) in enumerate(zip(hashes, receipts)):
            if receipt is not None and receipt.get("blockNumber") is not None:
                confirmations = max(0, quantity(tip) - quantity(receipt["blockNumber"]) + 1)
                mined = None if mined_hash == tx_hash else SignedPayout(mined_hash, known[index].raw, 0)
                return PayoutStatus(found=True, confirmations=confirmations, failed=quantity(receipt["status"]) == 0,
                                    mined=mined), receipt
        return PayoutStatus(found=await self.known_any(hashes), confirmations=0), None

    async def record_receipt(self, tx_hash: str, receipt: Mapping[str, Any]) -> int:
        """Mark a mined transaction (any version's hash names it) and return the fee it paid.

        The fee is the mined version's gasUsed × effectiveGasPrice; that
        version's hash is kept in ``mined_hash``.
        """
        gas_used = quantity(receipt["gasUsed"])
        fee = gas_used * quantity(receipt["effectiveGasPrice"])
        status = "reverted" if quantity(receipt["status"]) == 0 else "mined"
        owner = await self.owner(tx_hash)
        await self._set_status(owner.tx_hash if owner is not None else tx_hash, status, gas_used=gas_used,
                               fee_paid=self.gateway.db.amount_param(fee),
                               mined_hash=receipt.get("transactionHash") or tx_hash)
        return fee


def gwei(wei: int) -> str:
    """Wei as the operator writes gwei: exact, no float ("12.5")."""
    whole, rest = divmod(wei, GWEI)
    return str(whole) if rest == 0 else f"{whole}.{rest:09d}".rstrip("0")
