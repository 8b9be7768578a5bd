"""Every transaction the gateway signs on Solana, stored BEFORE it is sent.

``solana_txs`` holds payouts and sweeps alike, idempotent by (kind, ref):
a second ``sign_and_store`` for the same payout or sweep returns the same
bytes, so a crash anywhere re-sends them and never signs another transfer.

Blockhash expiry (a transaction is valid until the cluster's block height
passes ``lastValidBlockHeight`` of its recent blockhash): a stored
transaction is never re-signed. It is declared ``expired`` only when the
signature is unknown to the node (history searched) AND the *finalized*
block height is above its ``lastValidBlockHeight``: from then on no fork
can ever include it, so giving it up cannot pay twice (docs/solana.md).

Every transfer pays a priority fee (``fees.py``): its unit price is chosen,
and refused above the operator's ceiling, before anything is signed; the
fee stored is ``getFeeForMessage``'s quote for the whole message (signature
plus priority fee), which is what the runtime charges.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from ...api import BroadcastError, ChainUnavailable
from . import fees, wire
from .rpc import RpcError, SolanaRpc, lamports

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger(__name__)

LIVE = ("stored", "sent")


@dataclass(frozen=True)
class StoredTx:
    kind: str
    ref: str
    sender: str
    recipient: str
    amount: int
    fee: int  # what getFeeForMessage quoted at signing (signature and priority fee); the runtime charges it
    signature: str
    raw: str
    last_valid_block_height: int
    status: str
    created_at: int


@dataclass(frozen=True)
class SignatureStatus:
    slot: int
    err: Any
    level: str | None  # processed, confirmed, finalized


def _stored(gateway: "Gateway", row: Mapping[str, Any]) -> StoredTx:
    return StoredTx(row["kind"], row["ref"], row["sender"], row["recipient"], gateway.db.to_int(row["amount"]),
                    gateway.db.to_int(row["fee"]), row["signature"], row["raw"],
                    int(row["last_valid_block_height"]), row["status"], int(row["created_at"]))


def _permanent(error: Any) -> bool:
    """Preflight errors that sending the same bytes again cannot cure."""
    name = error if isinstance(error, str) else next(iter(error), "") if isinstance(error, dict) else ""
    return name in ("InsufficientFundsForFee", "InsufficientFundsForRent", "InstructionError",
                    "SignatureFailure", "InvalidAccountForFee", "AccountNotFound", "SanitizeFailure")


class NothingToSend(BroadcastError):
    """The sender holds no more than the fee: nothing worth sending."""


class TxStore:
    def __init__(self, gateway: "Gateway", rpc: SolanaRpc, commitment: str,
                 priority_fee: fees.PriorityFeePolicy) -> None:
        self.gateway, self.rpc, self.commitment = gateway, rpc, commitment
        self.priority_fee = priority_fee

    # -- chain reads ----------------------------------------------------------------------

    async def balance(self, address: str) -> int:
        return lamports(await self.rpc.value("getBalance", address, {"commitment": self.commitment}))

    async def rent_exempt_minimum(self) -> int:
        """Lamports an account without data must hold to exist (or it must hold none)."""
        return lamports(await self.rpc.call("getMinimumBalanceForRentExemption", 0))

    async def tip_slot(self) -> int:
        return lamports(await self.rpc.call("getSlot", {"commitment": self.commitment}))

    async def fee_for(self, message: bytes) -> int:
        fee = await self.rpc.value("getFeeForMessage", wire.encode_message(message), {"commitment": self.commitment})
        if fee is None:  # the blockhash expired between the two calls
            raise BroadcastError("blockhash expired while quoting the fee", permanent=False)
        return lamports(fee)

    async def signature_status(self, signature: str) -> SignatureStatus | None:
        statuses = await self.rpc.value("getSignatureStatuses", [signature], {"searchTransactionHistory": True})
        found = statuses[0] if isinstance(statuses, list) and statuses else None
        if not isinstance(found, dict):
            return None
        return SignatureStatus(lamports(found["slot"]), found.get("err"), found.get("confirmationStatus"))

    def settled(self, status: SignatureStatus) -> bool:
        """Whether ``status`` is at our commitment (a ``processed`` vote may still fork away)."""
        levels = ("finalized",) if self.commitment == "finalized" else ("confirmed", "finalized")
        return status.level in levels

    async def fee_paid(self, signature: str) -> int:
        """The fee the runtime charged, from the landed transaction's meta."""
        tx = await self.rpc.call("getTransaction", signature, {"commitment": self.commitment, "encoding": "json",
                                                               "maxSupportedTransactionVersion": 0})
        if not isinstance(tx, dict) or not isinstance(tx.get("meta"), dict):
            raise ChainUnavailable(f"transaction {signature} not available yet")
        return lamports(tx["meta"]["fee"])

    async def expired(self, stored: StoredTx) -> bool:
        """True once no fork can include ``stored`` any more (its signature must be unknown too)."""
        finalized = lamports(await self.rpc.call("getBlockHeight", {"commitment": "finalized"}))
        return finalized > stored.last_valid_block_height

    # -- sign and store -------------------------------------------------------------------

    async def find(self, kind: str, ref: str) -> StoredTx | None:
        row = await self.gateway.db.fetch_one("SELECT * FROM solana_txs WHERE kind = :k AND ref = :r",
                                              {"k": kind, "r": ref})
        return None if row is None else _stored(self.gateway, row)

    async def sign_and_store(self, *, kind: str, ref: str, seed: bytes, recipient: str, coin: str,
                             amount: int | None) -> StoredTx:
        """Sign a transfer from ``seed``'s address and store it; idempotent by (kind, ref).

        ``amount`` None sends the whole balance less the fee, leaving the
        account at exactly zero (closed: no rent question). Raises
        ``BroadcastError`` when the sender cannot pay, ``FeeAboveCeiling``
        (nothing signed) when recent priority fees are above the ceiling.
        """
        existing = await self.find(kind, ref)
        if existing is not None:
            return existing
        sender = wire.address_of(seed)
        price = await fees.unit_price(self.rpc, (sender, recipient), self.priority_fee)
        latest = await self.rpc.value("getLatestBlockhash", {"commitment": self.commitment})
        blockhash, last_valid = latest["blockhash"], lamports(latest["lastValidBlockHeight"])
        # The fee depends on the signatures and the compute budget, not on the amount: quote it on a draft.
        fee = await self.fee_for(wire.transfer_message(sender, recipient, 1, blockhash, price))
        balance = await self.balance(sender)
        if amount is None:
            amount = balance - fee
            if amount <= 0:
                raise NothingToSend(f"{sender} holds {balance} lamports, not more than the fee {fee}")
        elif balance < amount + fee:
            raise BroadcastError(f"{sender} holds {balance} lamports; {amount + fee} needed", permanent=False)
        elif 0 < balance - amount - fee < await self.rent_exempt_minimum():
            # The runtime refuses a payer left with a balance it could not keep rent-free.
            raise BroadcastError(f"{sender} would keep less than the rent-exempt minimum", permanent=False)
        signed = wire.sign(wire.transfer_message(sender, recipient, amount, blockhash, price), seed)
        db, now = self.gateway.db, self.gateway.now()
        row = {"id": "stx_" + secrets.token_hex(10), "kind": kind, "ref": ref, "sender": sender,
               "recipient": recipient, "coin": coin, "amount": db.amount_param(amount), "fee": db.amount_param(fee),
               "signature": signed.signature, "raw": signed.raw, "blockhash": blockhash,
               "last_valid_block_height": last_valid, "status": "stored", "created_at": now, "updated_at": now}
        await db.execute(f"INSERT INTO solana_txs ({', '.join(row)}) VALUES ({', '.join(':' + k for k in row)})"
                         " ON CONFLICT (kind, ref) DO NOTHING", row)
        stored = await self.find(kind, ref)  # a concurrent twin may have won: its bytes stand
        assert stored is not None, "inserted just above, and solana_txs rows are never deleted"
        log.info("solana: signed %s %s (%s) from %s", kind, ref, stored.signature, sender)
        return stored

    async def set_status(self, signature: str, status: str, **extra: Any) -> None:
        values = {"s": status, "sig": signature, "now": self.gateway.now(), **extra}
        sets = "".join(f", {k} = :{k}" for k in extra)
        await self.gateway.db.execute(
            f"UPDATE solana_txs SET status = :s, updated_at = :now{sets} WHERE signature = :sig", values)

    # -- send -----------------------------------------------------------------------------

    async def broadcast(self, stored: StoredTx) -> None:
        """Send the stored bytes (again); harmless when they already landed. Raises ``BroadcastError``."""
        try:
            answer = await self.rpc.call("sendTransaction", stored.raw, {
                "encoding": "base64", "preflightCommitment": self.commitment})
        except RpcError as exc:
            error = exc.transaction_error
            if error == "AlreadyProcessed":
                answer = stored.signature
            elif error == "BlockhashNotFound":
                if await self.signature_status(stored.signature) is None and await self.expired(stored):
                    await self.set_status(stored.signature, "expired")
                    raise BroadcastError("blockhash expired before the transaction landed", permanent=True) from None
                raise BroadcastError("blockhash not found yet (node behind?)", permanent=False) from None
            elif _permanent(error):
                raise BroadcastError(f"refused: {error}", permanent=True) from None
            else:
                raise BroadcastError(exc.message, permanent=False) from None
        except ChainUnavailable as exc:
            raise BroadcastError(str(exc), permanent=False) from None
        if answer != stored.signature:
            raise BroadcastError(f"node reports signature {answer} for {stored.signature}", permanent=True)
        await self.gateway.db.execute(
            "UPDATE solana_txs SET status = 'sent', updated_at = :now WHERE signature = :sig AND status = 'stored'",
            {"sig": stored.signature, "now": self.gateway.now()})
