"""The adapter conformance suite (``orbchain.testing``) against the solana plugin on the LiteSVM node.

Each test gets a fresh node (``tests/solana_node.py``): the real Solana
runtime judges every transaction the gateway sends, the node adds slots,
commitment and forks. A reorganisation drops the newest blocks and their
transactions and produces a longer branch at the same slots.
"""

from __future__ import annotations

from typing import AsyncIterator

import pytest
import pytest_asyncio

from orbchain.testing import AdapterConformance, capabilities

from .solana_node import SolanaDriver, SolanaNode, running_node

@pytest_asyncio.fixture
async def solana_node() -> AsyncIterator[SolanaNode]:
    async with running_node() as node:
        yield node



class TestSolanaConformance(AdapterConformance):
    @pytest.fixture
    def chain_driver(self, solana_node: SolanaNode) -> SolanaDriver:
        return SolanaDriver(solana_node, ws_url=solana_node.ws_url)  # PubSub: the kit's push case runs

    async def test_every_capability_but_the_mempool_is_declared(self, chain_shop):
        """Solana has no public mempool: a transfer shows from its block (docs/solana.md); PUSH with ``ws_url``."""
        assert capabilities.missing(chain_shop.adapter) == {capabilities.MEMPOOL}
