"""The ``zed`` chain plugin passes the adapter conformance kit, on both databases, as its author would run it.

Only ``orbchain.testing`` and the package itself: the driver talks to the
in-process node the gateway's adapter holds (``attach``), the way a driver
of a real chain talks to its regtest daemon.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from orbchain.api import AddressError
from orbchain.testing import AdapterConformance, ChainDriver, capabilities

from . import address
from .adapter import CHAIN, COIN, ZedAdapter
from .node import ZedNode

MODULE = "tests.third_party.zed.plugin"


class ZedDriver(ChainDriver):
    chain = CHAIN
    coin = COIN
    deposit_amount, payout_amount = "1", "0.3"
    blocked_plugins = ("devnet",)  # the devnet would simulate ZED too; the real adapter serves it here

    def __init__(self) -> None:
        self.node: ZedNode | None = None

    def config_sections(self) -> dict[str, dict[str, Any]]:
        return {"plugin": {"zed": {"network": "mainnet", "payout_fee": 1000}}}

    async def attach(self, gateway: Any) -> None:
        adapter = gateway.chains.get(CHAIN)
        assert isinstance(adapter, ZedAdapter)
        self.node = adapter.node

    @property
    def _node(self) -> ZedNode:
        assert self.node is not None, "attach() was not called"
        return self.node

    async def send(self, address: str, amount: int) -> str:
        return self._node.faucet(address, amount)

    async def mine(self, blocks: int) -> None:
        self._node.mine(blocks)

    async def reorg(self, depth: int) -> None:
        self._node.reorg(depth)

    async def height(self) -> int:
        return self._node.tip.height

    def external_address(self) -> str:
        return address.encode("mainnet", secrets.token_bytes(20))

    async def received(self, address: str) -> int:
        return self._node.balance(address)

    async def fund_hot_wallet(self, gateway: Any, amount: int) -> None:
        adapter = gateway.chains.get(CHAIN)
        self._node.faucet(adapter.hot_wallet(), amount + adapter.payout_fee)
        self._node.mine(1)

    async def prune(self) -> int:
        return self._node.prune()


class TestZedConformance(AdapterConformance):
    @pytest.fixture
    def chain_driver(self, install_plugin) -> ZedDriver:
        install_plugin("zed", MODULE)
        return ZedDriver()

    async def test_every_capability_is_declared(self, chain_shop):
        """So ``make test`` runs the whole suite: not one test of it is "not applicable" for zed."""
        assert capabilities.missing(chain_shop.adapter) == set()


def test_the_family_refuses_what_is_not_a_zed_address():
    good = address.encode("mainnet", bytes(range(1, 21)))
    assert address.validate(f"  {good.upper()} ", "mainnet") == good
    for bad, why in ((good[:-1] + ("0" if good[-1] != "0" else "1"), "checksum"),
                     (address.encode("testnet", bytes(range(1, 21))), "starts with zed1"),
                     ("zed1abc", "40 hex digits"), (12, "string")):
        with pytest.raises(AddressError) as refused:
            address.validate(bad, "mainnet")
        assert why in refused.value.detail
    with pytest.raises(AddressError) as burn:
        address.validate(address.encode("mainnet", bytes(20)), "mainnet")
    assert burn.value.code == "burn_address"


def test_the_node_refuses_an_unaffordable_transfer_and_reorgs_give_it_back():
    node = ZedNode()
    paid = node.faucet("alice", 10)
    node.mine(1)
    assert node.balance("alice") == 10 and node.status(paid) == ("mined", 1)
    node.reorg(1)
    assert node.status(paid) == ("mempool", None) and node.balance("alice") == 0 and node.tip.height == 2
    node.mine(1)
    assert node.balance("alice") == 10
    with pytest.raises(RuntimeError, match="cannot pay"):
        node.submit('{"amount":11,"fee":0,"from":"alice","nonce":"","to":"bob"}')
