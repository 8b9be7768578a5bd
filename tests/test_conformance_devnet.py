"""The adapter conformance suite (``orbchain.testing``) against the built-in devnet, both databases.

The devnet's chain lives in the gateway's own database, so its driver works
through the gateway it is attached to rather than a separate node.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from orbchain.chains.devnet import DevnetChain, devnet_chain
from orbchain.core.keys import SeedKeyStore
from tests.families import get_family
from orbchain.testing import AdapterConformance, ChainDriver, capabilities


class DevnetDriver(ChainDriver):
    chain = "devnet"
    coin = "BTC"
    charges_network_fee = False  # simulated payouts cost nothing

    def __init__(self) -> None:
        self.gateway: Any = None
        self.devnet: DevnetChain | None = None

    async def attach(self, gateway: Any) -> None:
        self.gateway, self.devnet = gateway, devnet_chain(gateway)

    async def send(self, address: str, amount: int) -> str:
        return await self.devnet.pay(self.gateway.coins.require(self.coin), address, amount)

    async def mine(self, blocks: int) -> None:
        await self.devnet.mine(blocks)

    async def reorg(self, depth: int) -> None:
        await self.devnet.reorg(depth)

    async def height(self) -> int:
        return (await self.devnet.tip()).height

    def external_address(self) -> str:
        return get_family("btc", "mainnet").derive(SeedKeyStore(secrets.token_bytes(32)), 0, 0).address

    async def received(self, address: str) -> int:
        rows = await self.gateway.db.fetch_all(
            "SELECT amount FROM devnet_txs WHERE address = :a AND coin = :c AND status = 'mined'",
            {"a": address, "c": self.coin})
        return sum(self.gateway.db.to_int(r["amount"]) for r in rows)


class TestDevnetConformance(AdapterConformance):
    @pytest.fixture
    def chain_driver(self) -> DevnetDriver:
        return DevnetDriver()

    async def test_every_capability_but_history_is_declared(self, chain_shop):
        """make test runs the whole suite; only the pruned-history test is not applicable (a devnet forgets nothing)."""
        assert capabilities.missing(chain_shop.adapter) == {capabilities.HISTORY}
