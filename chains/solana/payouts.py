"""The payout role: system transfers from the hot wallet, stored under the payout id.

``network_fee`` is the fee ``getFeeForMessage`` quoted for the signed
message; once landed, ``payout_status`` reports the fee the runtime
actually charged (``meta.fee``), which the core books like EVM gas.

A payout is never re-signed. While its blockhash can still land, a sent
transaction the node does not show yet counts as found (in flight: Solana
has no visible mempool), so the core's drop timer can never re-credit money
that may still arrive; each poll re-sends the same bytes meanwhile. Once it
can no longer land (``TxStore.expired``) it is not found, a send attempt is
refused permanently and the payout fails, re-crediting the merchant
(docs/solana.md).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from ...api import BroadcastError, PayoutOrder, PayoutSender, PayoutStatus, SignedPayout
from .keys import hot_wallet_key

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway
    from .txstore import StoredTx, TxStore

log = logging.getLogger(__name__)

PAYOUT = "payout"


class _AdapterParts(Protocol):
    name: str
    native: str
    gateway: "Gateway"
    txs: "TxStore"


async def _stored(adapter: _AdapterParts, signed: SignedPayout) -> "StoredTx":
    row = await adapter.gateway.db.fetch_one("SELECT kind, ref FROM solana_txs WHERE signature = :s",
                                             {"s": signed.tx_hash})
    stored = None if row is None else await adapter.txs.find(row["kind"], row["ref"])
    if stored is None:
        raise BroadcastError(f"no stored Solana transaction {signed.tx_hash}", permanent=True)
    return stored


async def _resend(txs: "TxStore", stored: "StoredTx") -> None:
    """Solana forgets unprocessed transactions silently: offer the same bytes again while they can land."""
    try:
        await txs.broadcast(stored)
    except BroadcastError as exc:
        log.info("solana: re-send of %s failed: %s", stored.signature, exc)


class SolanaPayouts(PayoutSender):
    """Mixed into ``SolanaAdapter`` (needs its ``txs`` and ``native``)."""

    async def sign_payout(self: _AdapterParts, order: PayoutOrder) -> SignedPayout:
        if order.coin != self.native or order.amount <= 0:
            raise BroadcastError(f"cannot pay {order.amount} {order.coin} on {self.name}", permanent=True)
        txs = self.txs
        if await txs.find(PAYOUT, order.payout_id) is None and await txs.balance(order.destination) == 0:
            minimum = await txs.rent_exempt_minimum()
            if order.amount < minimum:  # the runtime would refuse to create the account
                raise BroadcastError(f"a new Solana account needs at least {minimum} lamports", permanent=True)
        stored = await txs.sign_and_store(kind=PAYOUT, ref=order.payout_id, seed=hot_wallet_key(self.gateway),
                                          recipient=order.destination, coin=order.coin, amount=order.amount)
        return SignedPayout(stored.signature, stored.raw, stored.fee)

    async def broadcast(self: _AdapterParts, signed: SignedPayout) -> None:
        await self.txs.broadcast(await _stored(self, signed))

    async def signed_for(self: _AdapterParts, payout_id: str, tx_hash: str) -> bool:
        """The one transaction stored for the payout (``solana_txs``, kind ``payout``, never re-signed) is it."""
        stored = await self.txs.find(PAYOUT, payout_id)
        return stored is not None and stored.signature == tx_hash

    async def payout_status(self: _AdapterParts, signed: SignedPayout) -> PayoutStatus:
        txs = self.txs
        status = await txs.signature_status(signed.tx_hash)
        if status is None:
            # Sent with a blockhash that can still land: in flight (Solana shows no mempool), never "dropped".
            stored = await _stored(self, signed)
            # "landed" too: a fork may have taken it back, and the same bytes may land again.
            in_flight = stored.status in ("sent", "landed") and not await txs.expired(stored)
            if in_flight:
                await _resend(txs, stored)
            return PayoutStatus(found=in_flight)
        if not txs.settled(status):
            return PayoutStatus(found=True, confirmations=0)
        confirmations = max(1, await txs.tip_slot() - status.slot + 1)
        fee = await txs.fee_paid(signed.tx_hash)
        await txs.set_status(signed.tx_hash, "failed" if status.err is not None else "landed",
                             slot=status.slot, fee_paid=self.gateway.db.amount_param(fee))
        return PayoutStatus(found=True, confirmations=confirmations, failed=status.err is not None, network_fee=fee)
