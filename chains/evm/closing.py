"""Closing a dropped EVM payout: its nonce is taken by a confirmed transaction before the merchant gets the money back.

A payout our node no longer has may still be mined from a copy another node
kept, for as long as its nonce is free. So past the drop timeout the gateway
signs a zero-value transfer to itself at the same nonce, with fees above the
original's by the replacement minimum (``TxStore.sign_replacement``, stored
before it is broadcast), and answers ``closed`` only once the sender's
transaction count ``payout_confirmations`` deep has passed that nonce while
the payout's own transaction has no receipt: whatever took the nonce, the
original can never be mined. The nonce is never handed to a later payout on
one node's word. If the original is mined instead, ``payout_status`` sees it
and the payout ends Confirmed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ...api import BroadcastError, DropClosure
from .keys import hot_wallet_key

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway
    from .signer import StoredTx, TxStore

# The transaction that takes a dropped payout's nonce is stored as one of the payout's own (evm_txs.kind
# "payout", which the table's CHECK allows) under the payout id plus this suffix.
CANCEL_SUFFIX = ":cancel"


class _Chain(Protocol):
    """What closing uses of the ``EvmAdapter``."""

    gateway: "Gateway"
    txs: "TxStore"
    payout_confirmations: int


async def close_dropped(adapter: _Chain, payout_id: str, original: "StoredTx | None") -> DropClosure:
    """The ``PayoutSender.close_dropped`` of an EVM chain; ``original`` is the payout's stored transaction."""
    txs = adapter.txs
    if original is None:
        return DropClosure(closed=False, detail="no stored transaction for this payout; the operator decides")
    status, receipt = await txs.status(original.tx_hash)
    if status.found or receipt is not None:
        return DropClosure(closed=False, detail="the payout's own transaction is back on the node")
    cancel = await txs.find(original.kind, payout_id + CANCEL_SUFFIX)
    taken = await txs.confirmed_count(original.sender, adapter.payout_confirmations)
    if taken is not None and taken > original.nonce:
        fee = 0  # the nonce went to another transaction of ours, which books its own fee
        if cancel is not None:
            _, cancel_receipt = await txs.status(cancel.tx_hash)
            if cancel_receipt is not None:
                fee = await txs.record_receipt(cancel.tx_hash, cancel_receipt)
        return DropClosure(closed=True, network_fee=fee)
    if cancel is None:
        cancel = await txs.sign_replacement(original, kind=original.kind, ref=payout_id + CANCEL_SUFFIX,
                                            key=hot_wallet_key(adapter.gateway))
    depth = adapter.payout_confirmations
    detail = f"cancelling transaction {cancel.tx_hash} at nonce {original.nonce}: not {depth} confirmation(s) deep"
    try:
        await txs.broadcast(cancel.tx_hash, cancel.raw)
    except BroadcastError as exc:
        detail += f"; the node refused it for now: {exc}"
    return DropClosure(closed=False, detail=detail)
