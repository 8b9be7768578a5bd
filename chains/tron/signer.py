"""Sign-then-store, broadcast and follow Tron transactions (``tron_txs``).

Every transaction the gateway signs on Tron goes through
:meth:`TxStore.sign_and_store`: built on the node's newest block (TaPoS),
signed, and written to ``tron_txs`` before anything is broadcast. Asking
again for the same (kind, ref) returns the stored row, so a crash between
signing and broadcasting re-sends the same bytes; a second signature for the
same payout or sweep never exists.

Tron has no nonces: the txID makes a transaction unique, and the node
refuses a second copy (``DUP_TRANSACTION_ERROR``, harmless here). A stored
transaction is valid until ``expiration_ms``; after that no block can take
it, so a transaction the node has lost can be given up for good.
"""

from __future__ import annotations

import json
import logging
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from ...api import BroadcastError, ChainUnavailable, PayoutStatus
from .http import TronHttp, integer
from .transactions import Call, RefBlock, SignedTx, sign

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger(__name__)

# broadcasttransaction codes no retry can cure: these bytes will never be taken.
_PERMANENT = ("SIGERROR", "CONTRACT_VALIDATE_ERROR", "CONTRACT_EXE_ERROR", "BANDWIDTH_ERROR", "TAPOS_ERROR",
              "TRANSACTION_EXPIRATION_ERROR", "TOO_BIG_TRANSACTION_ERROR", "TOO_BIG_TRANSACTION_RESULT_ERROR")
_DUPLICATE = "DUP_TRANSACTION_ERROR"


@dataclass(frozen=True)
class StoredTx:
    """A row of ``tron_txs``."""

    id: str
    kind: str
    ref: str
    sender: str
    recipient: str
    coin: str
    amount: int
    tx_id: str
    body: str
    fee_bound: int
    expiration_ms: int
    status: str


@dataclass(frozen=True)
class MinedInfo:
    """What ``gettransactioninfobyid`` says of a mined transaction."""

    block: int
    confirmations: int
    succeeded: bool
    fee: int  # every sun the sender burned: bandwidth, energy and account creation
    activation_fee: int  # the part of ``fee`` that created a new account (system fee + creation fee)


def _message(answer: Mapping[str, Any]) -> str:
    """java-tron hex-encodes the message of a refused broadcast."""
    text = str(answer.get("message", ""))
    try:
        return bytes.fromhex(text).decode("utf-8", "replace")
    except ValueError:
        return text


def mined_info(info: Mapping[str, Any], tip: int) -> MinedInfo | None:
    """The outcome in a ``gettransactioninfobyid`` answer; None while the transaction is not in a block."""
    if not info or info.get("blockNumber") is None:
        return None
    block = integer(info.get("blockNumber"))
    receipt = info.get("receipt") or {}
    # A TRX transfer's receipt has no result; a contract call's says SUCCESS unless it failed.
    succeeded = info.get("result") != "FAILED" and receipt.get("result", "SUCCESS") in ("SUCCESS", "DEFAULT")
    fee = integer(info.get("fee"))
    net_fee, energy_fee = integer(receipt.get("net_fee")), integer(receipt.get("energy_fee"))
    # Only creating an account burns beyond bandwidth and energy (the system fee); such a
    # transfer's net_fee is the account-creation fee charged instead of bandwidth: both are activation.
    activation = fee - energy_fee if fee > net_fee + energy_fee else 0
    return MinedInfo(block, max(0, tip - block + 1), succeeded, fee, activation)


class TxStore:
    """Signs, stores, broadcasts and follows the plugin's transactions."""

    def __init__(self, gateway: "Gateway", http: TronHttp, *, expiration_seconds: int) -> None:
        self.gateway, self.http, self.expiration_seconds = gateway, http, expiration_seconds

    async def ref_block(self) -> RefBlock:
        block = await self.http.call("wallet/getnowblock")
        header = (block or {}).get("block_header", {}).get("raw_data", {})
        if not block or "blockID" not in block:
            raise ChainUnavailable("getnowblock answered no block")
        return RefBlock(integer(header.get("number")), str(block["blockID"]), integer(header.get("timestamp")))

    async def tip(self) -> int:
        return (await self.ref_block()).number

    def build(self, call: Call, ref: RefBlock, key: bytes, fee_limit: int = 0) -> SignedTx:
        return sign(call, ref, key, expiration_ms=ref.timestamp_ms + self.expiration_seconds * 1000,
                    timestamp_ms=self.gateway.now() * 1000, fee_limit=fee_limit)

    # -- sign and store -------------------------------------------------------------------

    async def find(self, kind: str, ref: str) -> StoredTx | None:
        row = await self.gateway.db.fetch_one("SELECT * FROM tron_txs WHERE kind = :k AND ref = :r",
                                              {"k": kind, "r": ref})
        return None if row is None else self._stored(row)

    def _stored(self, row: Mapping[str, Any]) -> StoredTx:
        to_int = self.gateway.db.to_int
        return StoredTx(row["id"], row["kind"], row["ref"], row["sender"], row["recipient"], row["coin"],
                        to_int(row["amount"]), row["tx_id"], row["body"], to_int(row["fee_bound"]),
                        int(row["expiration_ms"]), row["status"])

    async def store(self, *, kind: str, ref: str, signed: SignedTx, expiration_ms: int, sender: str, recipient: str,
                    coin: str, amount: int, fee_bound: int) -> StoredTx:
        """Write a signed transaction; the first one stored for (kind, ref) wins and is returned."""
        db = self.gateway.db
        now = self.gateway.now()
        row = {"id": "ttx_" + secrets.token_hex(10), "kind": kind, "ref": ref, "sender": sender,
               "recipient": recipient, "coin": coin, "amount": db.amount_param(amount), "tx_id": signed.tx_id,
               "body": signed.body, "fee_bound": db.amount_param(fee_bound), "expiration_ms": expiration_ms,
               "status": "stored", "created_at": now, "updated_at": now}
        await db.execute(f"INSERT INTO tron_txs ({', '.join(row)}) VALUES ({', '.join(':' + k for k in row)})"
                         " ON CONFLICT (kind, ref) DO NOTHING", row)
        stored = await self.find(kind, ref)
        assert stored is not None, "inserted just above (or by a concurrent twin), and rows are never deleted"
        if stored.tx_id == signed.tx_id:
            log.info("tron: signed %s %s from %s", kind, signed.tx_id, sender)
        return stored

    async def sign_and_store(self, *, kind: str, ref: str, key: bytes, call: Call, sender: str, recipient: str,
                             coin: str, amount: int, fee_bound: int, fee_limit: int = 0,
                             block: RefBlock | None = None) -> StoredTx:
        """Sign one transaction and store it; idempotent by (kind, ref)."""
        existing = await self.find(kind, ref)
        if existing is not None:
            return existing
        ref_block = block or await self.ref_block()
        signed = self.build(call, ref_block, key, fee_limit)
        return await self.store(kind=kind, ref=ref, signed=signed, sender=sender, recipient=recipient, coin=coin,
                                amount=amount, fee_bound=fee_bound,
                                expiration_ms=ref_block.timestamp_ms + self.expiration_seconds * 1000)

    # -- broadcast and status --------------------------------------------------------------

    async def set_status(self, tx_id: str, status: str, **extra: Any) -> None:
        values = {"s": status, "h": tx_id, "now": self.gateway.now(), **extra}
        sets = "".join(f", {k} = :{k}" for k in extra)
        await self.gateway.db.execute(f"UPDATE tron_txs SET status = :s, updated_at = :now{sets} WHERE tx_id = :h",
                                      values)

    async def broadcast(self, tx_id: str, body: str) -> None:
        """Send stored bytes; repeating it is harmless. Raises ``BroadcastError``."""
        answer = await self.http.call("wallet/broadcasttransaction", json.loads(body))
        if answer.get("result") is True or answer.get("code") == _DUPLICATE:
            await self.gateway.db.execute(
                "UPDATE tron_txs SET status = 'broadcast', updated_at = :now WHERE tx_id = :h AND status = 'stored'",
                {"h": tx_id, "now": self.gateway.now()})
            return
        code = str(answer.get("code", "UNKNOWN"))
        raise BroadcastError(f"{code}: {_message(answer)}", permanent=code in _PERMANENT)

    async def info(self, tx_id: str) -> Mapping[str, Any]:
        return await self.http.call("wallet/gettransactioninfobyid", {"value": tx_id}) or {}

    async def pending(self, tx_id: str) -> bool:
        """Whether the node holds the transaction unmined (its pending pool)."""
        return bool(await self.http.call("wallet/gettransactionfrompending", {"value": tx_id}))

    async def status(self, tx_id: str) -> tuple[PayoutStatus, MinedInfo | None]:
        mined = mined_info(await self.info(tx_id), await self.tip())
        if mined is None:
            return PayoutStatus(found=await self.pending(tx_id), confirmations=0), None
        return PayoutStatus(found=True, confirmations=mined.confirmations, failed=not mined.succeeded,
                            network_fee=mined.fee), mined

    async def record_mined(self, tx_id: str, mined: MinedInfo) -> None:
        db = self.gateway.db
        await self.set_status(tx_id, "mined" if mined.succeeded else "failed",
                              fee_paid=db.amount_param(mined.fee), activation_fee=db.amount_param(mined.activation_fee))

