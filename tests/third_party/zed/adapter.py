"""``ZedAdapter``: the ZED node behind the chain-adapter contract, with its payout role.

Declares every capability the conformance kit checks: deposits (blocks and
reorgs through ``tip``/``block``), the mempool (Paying before a block),
payouts from the hot wallet (HD account 0, index 0 of the ``zed`` family:
merchants derive under accounts 1 and up) and history (deposits inside
pruned blocks, through the node's address index), push (the node's
announcements of transactions and blocks) and custody (what the node says
the hot wallet, the credited deposit addresses and the cold ones hold). Payouts cost a flat network fee
the platform pays.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Sequence

from orbchain.api import (
    Block, BlockRef, BlocksPruned, BroadcastError, Capability, ChainAdapter, CustodyPlace, Holding, PastTransfer,
    PayoutOrder, PayoutSender, PayoutStatus, SignedPayout, Transfer, credited_addresses,
)
from orbchain.api.addresses import keystore

from .address import FAMILY
from .node import InsufficientFunds, ZedBlock, ZedNode, ZedTx, raw_transfer

CHAIN = "zed"
COIN = "ZED"
HOT_WALLET = (0, 0)  # (account, index)


class ZedAdapter(ChainAdapter, PayoutSender):
    name = CHAIN
    coins = (COIN,)
    capabilities = frozenset({Capability.DEPOSITS, Capability.MEMPOOL, Capability.PAYOUTS, Capability.HISTORY,
                              Capability.PUSH, Capability.CUSTODY})
    payout_confirmations = 2

    def __init__(self, gateway: Any, node: ZedNode, network: str, payout_fee: int) -> None:
        self.gateway, self.node, self.network, self.payout_fee = gateway, node, network, payout_fee

    # -- deposits ----------------------------------------------------------------------------------

    async def tip(self) -> BlockRef:
        return BlockRef(self.node.tip.height, self.node.tip.hash)

    async def block(self, height: int) -> Block:
        if height < self.node.first_available:
            raise BlocksPruned(height, self.node.first_available)
        found = self.node.block(height)
        return Block(found.height, found.hash, found.parent, tuple(_transfer(tx) for tx in found.txs))

    async def mempool(self) -> Sequence[Transfer]:
        return [_transfer(tx) for tx in self.node.mempool.values()]

    async def address_history(self, addresses: Sequence[str], start: int, end: int) -> Sequence[PastTransfer]:
        return [PastTransfer(_transfer(tx), _ref(block)) for block, tx in self.node.history(set(addresses), start, end)]

    async def push(self, heard: Callable[[str], None]) -> None:
        self.node.subscribers.append(heard)
        try:
            await asyncio.Event().wait()  # the node lives in this process: its stream never drops
        finally:
            self.node.subscribers.remove(heard)

    async def custody_holdings(self, cold_addresses: Sequence[str]) -> Sequence[Holding]:
        """The node's confirmed balances: the hot wallet, each credited deposit address, each cold address."""
        deposits = sorted({c.address for c in await credited_addresses(self.gateway, self.name)})
        holdings = [Holding(COIN, CustodyPlace.HOT_WALLET, self.node.balance(self.hot_wallet()), 1),
                    Holding(COIN, CustodyPlace.DEPOSIT_ADDRESSES, sum(self.node.balance(a) for a in deposits),
                            len(deposits))]
        if cold_addresses:
            holdings.append(Holding(COIN, CustodyPlace.COLD, sum(self.node.balance(a) for a in cold_addresses),
                                    len(cold_addresses)))
        return holdings

    # -- payouts -----------------------------------------------------------------------------------

    def hot_wallet(self) -> str:
        family = self.gateway.address_families.require(FAMILY, self.network)
        return family.derive(keystore(self.gateway, self.network), *HOT_WALLET).address

    async def sign_payout(self, order: PayoutOrder) -> SignedPayout:
        raw = raw_transfer(self.hot_wallet(), order.destination, order.amount, self.payout_fee, order.payout_id)
        return SignedPayout(ZedTx.of(raw).hash, raw, network_fee=self.payout_fee)

    async def broadcast(self, signed: SignedPayout) -> None:
        try:
            tx = ZedTx.of(signed.raw)
        except ValueError as exc:
            raise BroadcastError(str(exc), permanent=True) from None
        if tx.hash != signed.tx_hash:
            raise BroadcastError("transaction hash does not match its contents", permanent=True)
        try:
            self.node.submit(signed.raw)
        except InsufficientFunds as exc:  # the operator tops up the hot wallet; the worker retries
            raise BroadcastError(str(exc), reason="hot_wallet_underfunded") from None

    async def payout_status(self, signed: SignedPayout) -> PayoutStatus:
        found = self.node.status(signed.tx_hash)
        if found is None:
            return PayoutStatus(found=False)
        state, height = found
        if state != "mined" or height is None:
            return PayoutStatus(found=True)
        return PayoutStatus(found=True, confirmations=self.node.tip.height - height + 1,
                            network_fee=ZedTx.of(signed.raw).fee)


def _transfer(tx: ZedTx) -> Transfer:
    return Transfer(tx.hash, 0, tx.to, COIN, tx.amount)


def _ref(block: ZedBlock) -> BlockRef:
    return BlockRef(block.height, block.hash)
