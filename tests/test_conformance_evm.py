"""The adapter conformance suite (``orbchain.testing``) against the evm plugin on anvil: ETH and a token.

Shares the process-wide anvil with the other EVM tests. For this module the
node mines only when asked (automine off, restored afterwards), so a
payment or a payout waits in the pool like on a real chain. A
reorganisation rolls the newest blocks back (``anvil_rollback``, which drops
their transactions) and mines a longer branch.
"""

from __future__ import annotations

from typing import Any

import pytest
from eth_account import Account

from orbchain.chains.evm.keys import hot_wallet_address
from orbchain.testing import AdapterConformance, ChainDriver, capabilities

from .anvil import CHAIN_ID, PAYER, Anvil, EvmShop, balance_of_data, start_anvil

TOKEN_UNITS = 10**6  # TestToken as USDT_ERC20: 6 decimals


class AnvilDriver(ChainDriver):
    """Native ETH from anvil's pre-funded payer account."""

    chain = "ethereum"
    coin = "ETH"
    blocked_plugins = ("devnet",)

    def __init__(self, node: Anvil, token: str) -> None:
        self.node, self.token = node, token

    def config_sections(self) -> dict[str, dict[str, Any]]:
        settings = {"rpc_url": self.node.url, "ws_url": self.node.ws_url, "chain_id": CHAIN_ID,
                    "start_height": self.node.height() + 1, "scan_seconds": 1, "contracts": {"USDT_ERC20": self.token}}
        return {"plugin": {"evm": {"ethereum": settings}}}

    async def send(self, address: str, amount: int) -> str:
        return self.node.send(PAYER, address, value=amount)

    async def mine(self, blocks: int) -> None:
        self.node.mine(blocks)

    async def reorg(self, depth: int) -> None:
        self.node.rpc("anvil_rollback", depth)
        self.node.mine(depth + 1)

    async def height(self) -> int:
        return self.node.height()

    def external_address(self) -> str:
        return Account.create().address

    async def received(self, address: str) -> int:
        return self.node.balance(address)

    async def fund_hot_wallet(self, gateway: Any, amount: int) -> None:
        self.node.set_balance(hot_wallet_address(gateway), amount + 10**18)  # plus gas


class TokenDriver(AnvilDriver):
    """The pinned ERC-20 (as USDT_ERC20), paid by the payer's minted balance."""

    coin = "USDT_ERC20"
    deposit_amount = "25"
    payout_amount = "10"

    def shop(self) -> EvmShop:
        return EvmShop(self.node, None, None, None, None, self.token, "")

    async def send(self, address: str, amount: int) -> str:
        return self.shop().pay_token(address, amount)

    async def received(self, address: str) -> int:
        return int(self.node.rpc("eth_call", {"to": self.token, "data": balance_of_data(address)}, "latest"), 16)

    async def fund_hot_wallet(self, gateway: Any, amount: int) -> None:
        hot = hot_wallet_address(gateway)
        self.node.set_balance(hot, 10**18)  # gas
        self.shop().mint(hot, amount)
        self.node.mine(1)  # the payout's gas estimate must see the tokens


@pytest.fixture(scope="module")
def manual_anvil() -> Any:
    """The shared anvil with a pinned token funded for the payer, mining only on request."""
    node = start_anvil()
    token = node.deploy_token("Tether USD", "USDT", 6)
    EvmShop(node, None, None, None, None, token, "").mint(PAYER, 10**6 * TOKEN_UNITS)
    node.set_automine(False)
    try:
        yield node, token
    finally:
        node.mine(1)  # nothing left pending for the next module
        node.set_automine(True)


class TestAnvilEthConformance(AdapterConformance):
    @pytest.fixture
    def chain_driver(self, manual_anvil) -> AnvilDriver:
        return AnvilDriver(*manual_anvil)

    async def test_every_capability_but_the_mempool_and_history_is_declared(self, chain_shop):
        """EVM deposits show from their first block (docs/evm.md); all the rest is declared, PUSH with ``ws_url``."""
        assert capabilities.missing(chain_shop.adapter) == {capabilities.MEMPOOL, capabilities.HISTORY}


class TestAnvilTokenConformance(AdapterConformance):
    @pytest.fixture
    def chain_driver(self, manual_anvil) -> TokenDriver:
        return TokenDriver(*manual_anvil)

    async def test_every_capability_but_the_mempool_and_history_is_declared(self, chain_shop):
        """An ERC-20 token declares what ETH does (docs/evm.md): a capability dropped skips its tests silently."""
        assert capabilities.missing(chain_shop.adapter) == {capabilities.MEMPOOL, capabilities.HISTORY}
