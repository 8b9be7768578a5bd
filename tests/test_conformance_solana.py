"""The adapter conformance suite (``orbchain.testing``) against the solana plugin on the LiteSVM node.

Each test gets a fresh node (``tests/solana_node.py``): the real Solana
runtime judges every transaction the gateway sends, the node adds slots,
commitment and forks. A reorganisation drops the newest blocks and their
transactions and produces a longer branch at the same slots.
"""

from __future__ import annotations

from typing import Any, AsyncIterator

import pytest
import pytest_asyncio
from solders.keypair import Keypair

from orbchain.chains.solana.keys import hot_wallet_address
from orbchain.testing import AdapterConformance, ChainDriver, capabilities

from .solana_node import SolanaNode


class SolanaDriver(ChainDriver):
    chain = "solana"
    coin = "SOL"
    deposit_amount = "1"
    payout_amount = "0.3"
    blocked_plugins = ("devnet",)

    def __init__(self, node: SolanaNode) -> None:
        self.node = node

    def config_sections(self) -> dict[str, dict[str, Any]]:
        return {"plugin": {"solana": {"rpc_url": self.node.url, "start_height": self.node.tip.slot + 1,
                                      "scan_seconds": 1}}}

    async def send(self, address: str, amount: int) -> str:
        return self.node.pay(address, amount)

    async def mine(self, blocks: int) -> None:
        self.node.produce(blocks)

    async def reorg(self, depth: int) -> None:
        self.node.reorg(depth)

    async def height(self) -> int:
        return self.node.tip.slot

    def external_address(self) -> str:
        return str(Keypair().pubkey())

    async def received(self, address: str) -> int:
        return self.node.balance(address)

    async def fund_hot_wallet(self, gateway: Any, amount: int) -> None:
        self.node.airdrop(hot_wallet_address(gateway), amount + 10**9)  # plus fees and rent


@pytest_asyncio.fixture
async def solana_node() -> AsyncIterator[SolanaNode]:
    node = await SolanaNode().start()
    node.produce(1)
    try:
        yield node
    finally:
        await node.stop()


class TestSolanaConformance(AdapterConformance):
    @pytest.fixture
    def chain_driver(self, solana_node: SolanaNode) -> SolanaDriver:
        return SolanaDriver(solana_node)

    async def test_every_capability_but_the_mempool_is_declared(self, chain_shop):
        """Solana has no public mempool: a transfer shows from its block (docs/solana.md)."""
        assert capabilities.missing(chain_shop.adapter) == {capabilities.MEMPOOL}
