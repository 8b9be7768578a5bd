"""The adapter conformance suite (``orbchain.testing``) against the bitcoin plugin on litecoind regtest.

Shares the session's node and faucet with ``test_bitcoin_litecoind.py``; the gateway follows the node
as a P2P peer (``p2p``), so the kit's push case runs too.
A reorganisation invalidates the newest blocks and mines a longer branch of
empty blocks (``generateblock`` with no transactions) to a second address,
so the new blocks never repeat the old ones and the deposit stays in the
mempool, unconfirmed.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from orbchain.chains.bitcoin.rpc import coin_units
from orbchain.core.keys import SeedKeyStore
from tests.families import get_family
from orbchain.testing import AdapterConformance, ChainDriver, capabilities

from .litecoind import Faucet, Node, faucet, litecoind_node  # noqa: F401 - session fixtures


class LitecoindDriver(ChainDriver):
    chain = "litecoin"
    coin = "LTC"
    blocked_plugins = ("devnet",)

    def __init__(self, node: Node, faucet: Faucet) -> None:  # noqa: F811 - not the fixture
        self.node, self.faucet = node, faucet
        self.family = get_family("ltc", "regtest")
        self.branch_address = self.family.derive(faucet.store, 0, 1).address

    def config_sections(self) -> dict[str, dict[str, Any]]:
        return {"plugin": {"bitcoin": {"LTC": self.node.plugin_block(p2p=self.node.p2p)}}}

    async def send(self, address: str, amount: int) -> str:
        return self.faucet.pay(address, amount)

    async def mine(self, blocks: int) -> None:
        self.faucet.mine(blocks)

    async def reorg(self, depth: int) -> None:
        self.node.call("invalidateblock", self.node.call("getblockhash", self.node.height() - depth + 1))
        for _ in range(depth + 1):
            self.node.call("generateblock", self.branch_address, [])

    async def height(self) -> int:
        return self.node.height()

    def external_address(self) -> str:
        return self.family.derive(SeedKeyStore(secrets.token_bytes(32)), 0, 0).address

    async def received(self, address: str) -> int:
        found = self.node.call("scantxoutset", "start", [f"addr({address})"])
        return coin_units(found["total_amount"])


class TestLitecoindConformance(AdapterConformance):
    @pytest.fixture
    def chain_driver(self, litecoind_node, faucet) -> LitecoindDriver:  # noqa: F811 - fixtures
        return LitecoindDriver(litecoind_node, faucet)

    async def test_every_capability_but_history_is_declared(self, chain_shop):
        """A full node keeps every block: no address-history catch-up (docs/plugins.md, pruned blocks). PUSH is
        declared (``p2p`` set), so the kit's push case is not skipped as "not applicable"."""
        assert capabilities.missing(chain_shop.adapter) == {capabilities.HISTORY}
