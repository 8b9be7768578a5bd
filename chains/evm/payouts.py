"""The payout role of an EVM chain: type-2 transactions from the hot wallet.

Native coins are a plain value transfer; tokens are ``transfer(to, amount)``
on the pinned contract with value 0. The signed transaction is stored in
``evm_txs`` under the payout id (``kind = 'payout'``), so a second
``sign_payout`` for the same payout returns the same bytes and nonce.

``network_fee`` is the upper bound the hot wallet can pay: gas limit × max
fee per gas, known at signing (the receipt's actual fee is lower; the
gateway keeps it in ``evm_txs.fee_paid``). It is in the chain's native
coin (wei), also for token payouts.

A payout dropped from the node is closed by a transaction of ours at its
nonce before any re-credit (``closing.py``); one stuck in the mempool below
the market's fees is re-signed at its nonce (``bumping.py``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Protocol

from ...api import (BroadcastError, DropClosure, PayoutOrder, PayoutSender, PayoutStatus, SignedPayout,
                    authorize_fee_bump)
from . import bumping, closing
from .keys import hot_wallet_key
from .tokens import transfer_calldata

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway
    from .settings import ChainSettings
    from .signer import TxStore

PAYOUT = "payout"


class _EvmAdapterParts(Protocol):
    """What the payout role uses of the ``EvmAdapter`` it is mixed into (its methods' self type)."""

    name: str
    native: str
    gateway: "Gateway"
    txs: "TxStore"
    payout_confirmations: int
    settings: "ChainSettings"

    def token_contract(self, coin: str) -> str | None: ...


class EvmPayouts(PayoutSender):
    """Mixed into ``EvmAdapter`` (needs its ``txs``, ``native``, ``token_contract``)."""

    async def sign_payout(self: _EvmAdapterParts, order: PayoutOrder) -> SignedPayout:
        if order.amount <= 0:
            raise BroadcastError("payout amount must be positive", permanent=True)
        if order.coin == self.native:
            to, value, data = order.destination, order.amount, "0x"
        else:
            contract = self.token_contract(order.coin)
            if contract is None:
                raise BroadcastError(f"{order.coin} is not served on {self.name}", permanent=True)
            to, value, data = contract, 0, transfer_calldata(order.destination, order.amount)
        stored = await self.txs.sign_and_store(
            kind=PAYOUT, ref=order.payout_id, key=hot_wallet_key(self.gateway), to=to, value=value, data=data,
            coin=order.coin, amount=order.amount, under_ceiling=True)  # above the fee ceiling: the payout waits
        return SignedPayout(stored.tx_hash, stored.raw, stored.max_network_fee)

    async def broadcast(self: _EvmAdapterParts, signed: SignedPayout) -> None:
        await self.txs.broadcast(signed.tx_hash, signed.raw)

    async def bump_stuck(self: _EvmAdapterParts, payout_id: str, signed: SignedPayout) -> str | None:
        """Re-sign the payout at its nonce with higher fees once stuck ``bump_after_blocks`` (``bumping.py``).

        Reads the stored transaction itself (never ``signed``'s fields), so the
        remote signer's ``bump`` step re-signs only what the database holds.
        The extra gas passes the signer's caps in the native coin first (a
        token payout's too: gas is paid in it); refused, the reason is
        returned and nothing signed. Raises ``FeeAboveCeiling`` when even the
        least replacement is above the ceiling: the payout waits in the
        mempool, the reason on the payout.
        """
        stored = await self.txs.find(PAYOUT, payout_id)
        if stored is None:
            return None
        authorize = partial(authorize_fee_bump, self.gateway, payout_id, fee_coin=self.native)
        return await bumping.bump_stuck(self.txs, stored, hot_wallet_key(self.gateway),
                                        self.settings.bump_after_blocks, authorize)

    async def close_dropped(self: _EvmAdapterParts, payout_id: str, signed: SignedPayout) -> DropClosure:
        """Take the dropped payout's nonce with a transaction of ours; closed once that is deep (``closing.py``)."""
        original = await self.txs.find(PAYOUT, payout_id)
        return await closing.close_dropped(self, payout_id, original)

    async def release_failed_payout(self: _EvmAdapterParts, payout_id: str) -> bool:
        """A Failed payout whose transaction the node does not know gives its nonce back.

        Without this a dropped or never-accepted transaction leaves a gap that
        holds every later hot-wallet transaction. A transaction the node still
        has pending (it may yet be mined) or that was mined keeps its nonce.
        Returns whether the nonce became reusable.
        """
        stored = await self.txs.find(PAYOUT, payout_id)
        if stored is None or stored.status not in ("stored", "broadcast"):
            return False
        if await self.txs.known(stored.tx_hash):
            return False
        await self.txs.abandon(stored.tx_hash)
        return True

    async def payout_status(self: _EvmAdapterParts, signed: SignedPayout) -> PayoutStatus:
        status, receipt = await self.txs.status(signed.tx_hash)
        if receipt is not None:
            paid = await self.txs.record_receipt(signed.tx_hash, receipt)
            status = replace(status, network_fee=paid)  # gas used x effective price, not the ceiling
        return status
