"""Fixtures and the chain driver for the Tron tests: the stand-in node served over HTTP, a shop on it."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import pytest

from orbchain.chains.tron.keys import hot_wallet_address
from orbchain.testing import ChainDriver

from .tron_node import TronNode, address_of, compile_protos, t_address

API_KEY = "test-" + secrets.token_hex(8)
TOKEN_SUPPLY = 10**15


@pytest.fixture(scope="session")
def tron_protos(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Tron's message classes, generated from the .proto by protoc (grpcio-tools) once per run."""
    return compile_protos(tmp_path_factory.mktemp("tron_protos"))


@dataclass
class NodeOnline:
    node: TronNode
    url: str
    usdt: str
    other: str  # a TRC-20 contract that is not pinned


@pytest.fixture
async def tron_node(tron_protos: Any, aiohttp_server: Any) -> NodeOnline:
    node = TronNode(tron_protos, api_key=API_KEY)
    usdt = node.deploy_token("USDT", TOKEN_SUPPLY)
    other = node.deploy_token("FAKE", TOKEN_SUPPLY)
    server = await aiohttp_server(node.app())
    node.mine(1)
    return NodeOnline(node, str(server.make_url("")).rstrip("/"), usdt, other)


def tron_settings(online: NodeOnline, **overrides: Any) -> dict[str, Any]:
    return {"url": online.url, "api_key": API_KEY, "start_height": online.node.head.number + 1, "scan_seconds": 1,
            "contracts": {"USDT_TRC20": online.usdt}, **overrides}


def fresh_address() -> str:
    return t_address(address_of(secrets.token_bytes(32)))


class TronDriver(ChainDriver):
    """TRX from the stand-in's payer account."""

    chain = "tron"
    coin = "TRX"
    deposit_amount = "50"
    payout_amount = "10"
    blocked_plugins = ("devnet",)

    def __init__(self, online: NodeOnline) -> None:
        self.online, self.node = online, online.node

    def config_sections(self) -> dict[str, dict[str, Any]]:
        return {"plugin": {"tron": tron_settings(self.online)}}

    async def attach(self, gateway: Any) -> None:
        """TRX is not among a new merchant's default coins: the shop accepts it, as a merchant would."""
        from orbchain.core.accounts.merchants import accepted_coins, set_accepted_coins

        for merchant in await gateway.db.fetch_all("SELECT * FROM merchants"):
            coins = accepted_coins(merchant)
            if self.coin not in coins:
                await set_accepted_coins(gateway, merchant["id"], [*coins, self.coin])

    async def send(self, address: str, amount: int) -> str:
        return self.node.pay_trx(address, amount)

    async def mine(self, blocks: int) -> None:
        self.node.mine(blocks)

    async def reorg(self, depth: int) -> None:
        self.node.reorg(depth)

    async def height(self) -> int:
        return self.node.head.number

    def external_address(self) -> str:
        return fresh_address()

    async def received(self, address: str) -> int:
        return self.node.balance(address)

    async def fund_hot_wallet(self, gateway: Any, amount: int) -> None:
        self.node.pay_trx(hot_wallet_address(gateway), amount + 200 * 10**6)  # plus fees
        self.node.mine(1)


class TronTokenDriver(TronDriver):
    """The pinned TRC-20 (as USDT_TRC20)."""

    coin = "USDT_TRC20"
    deposit_amount = "25"
    payout_amount = "10"

    async def send(self, address: str, amount: int) -> str:
        return self.node.pay_token(self.online.usdt, address, amount)

    async def received(self, address: str) -> int:
        return self.node.token_balance(self.online.usdt, address)

    async def fund_hot_wallet(self, gateway: Any, amount: int) -> None:
        hot = hot_wallet_address(gateway)
        self.node.pay_trx(hot, 200 * 10**6)  # energy and bandwidth
        self.node.pay_token(self.online.usdt, hot, amount)
        self.node.mine(1)


@dataclass
class TronShop:
    """A gateway on the stand-in node with one merchant accepting TRX and USDT_TRC20."""

    online: NodeOnline
    client: Any
    merchant: Any
    gateway: Any
    adapter: Any

    @property
    def node(self) -> TronNode:
        return self.online.node

    async def scan(self) -> Any:
        from orbchain.core.watching.scanner import scan_chain

        return await scan_chain(self.gateway, self.adapter)

    async def mine(self, blocks: int = 1) -> Any:
        self.node.mine(blocks)
        return await self.scan()

    async def sweep(self) -> Any:
        """One run of the sweep job, then serve's booking of what it recorded (``ledger.book_sweeps``)."""
        from orbchain.chains.tron import sweep_chain
        from orbchain.core.ledger.sweep_bookings import book_sweeps

        report = await sweep_chain(self.gateway, self.adapter)
        await book_sweeps(self.gateway)
        return report

    async def payment(self, coin: str, amount: str) -> dict[str, Any]:
        from orbchain.testing.api import create_payment

        return await create_payment(self.client, self.merchant, coin, amount)

    async def view(self, track_id: str) -> dict[str, Any]:
        from orbchain.testing.api import view_payment

        return await view_payment(self.client, self.merchant, track_id)

    async def deposits(self) -> list[Any]:
        return await self.gateway.db.fetch_all("SELECT * FROM deposits ORDER BY created_at")


async def open_tron_shop(online: NodeOnline, make_config: Any, make_client: Any, **settings: Any) -> TronShop:
    from orbchain.core.accounts.merchants import set_accepted_coins
    from orbchain.testing import open_shop

    shop = await open_shop(make_config, make_client, blocked=("devnet",), email="tron-shop@example.com",
                           plugin={"tron": tron_settings(online, **settings)})
    await set_accepted_coins(shop.gateway, shop.merchant.merchant_id, ["TRX", "USDT_TRC20"])
    tron = TronShop(online, shop.client, shop.merchant, shop.gateway, shop.gateway.chains.get("tron"))
    await tron.scan()
    return tron
