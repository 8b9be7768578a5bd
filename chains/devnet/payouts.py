"""The devnet's payout role: a simulated hot wallet behind ``PayoutSender``.

Signing is deterministic: the raw transaction is a JSON text naming the
payout, coin, destination and amount, and the hash is SHA-256 of it, so the
same payout always yields the same transaction. Broadcasting inserts that
transaction into the devnet mempool under its hash and ignores a repeat,
like a node's ``sendrawtransaction``; status comes from ``tx_status``.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from ...api import BroadcastError, PayoutOrder, PayoutSender, PayoutStatus, SignedPayout
from .chain import DevnetError

if TYPE_CHECKING:  # pragma: no cover
    from .chain import DevnetChain

RAW_PREFIX = "devnet-payout:"


def _hash(raw: str) -> str:
    return hashlib.sha256((RAW_PREFIX + raw).encode()).hexdigest()


class DevnetPayouts(PayoutSender):
    """Mixed into ``DevnetAdapter``; needs ``self.chain`` (a ``DevnetChain``)."""

    chain: "DevnetChain"
    payout_confirmations = 1

    async def sign_payout(self, order: PayoutOrder) -> SignedPayout:
        raw = json.dumps({"payout_id": order.payout_id, "coin": order.coin, "to": order.destination,
                          "amount": str(order.amount)}, sort_keys=True, separators=(",", ":"))
        return SignedPayout(_hash(raw), raw)

    async def broadcast(self, signed: SignedPayout) -> None:
        try:
            tx = json.loads(signed.raw)
            amount = int(tx["amount"])
        except (ValueError, KeyError, TypeError):
            raise BroadcastError("malformed transaction", permanent=True) from None
        if _hash(signed.raw) != signed.tx_hash:
            raise BroadcastError("transaction hash does not match its contents", permanent=True)
        try:
            await self.chain.submit(signed.tx_hash, tx["coin"], tx["to"], amount, payout_id=tx.get("payout_id"))
        except DevnetError as exc:
            raise BroadcastError(str(exc), permanent=True) from None

    async def signed_for(self, payout_id: str, tx_hash: str) -> bool:
        """The devnet's record of a payout transaction is the payout its mempool accepted it for (a payer's: none)."""
        return await self.chain.payout_of(tx_hash) == payout_id

    async def payout_status(self, signed: SignedPayout) -> PayoutStatus:
        found = await self.chain.tx_status(signed.tx_hash)
        if found is None or found[0] == "dropped":
            return PayoutStatus(found=False)
        status, height = found
        if status != "mined" or height is None:
            return PayoutStatus(found=True, confirmations=0)
        tip = await self.chain.tip()
        return PayoutStatus(found=True, confirmations=max(0, tip.height - height + 1))
