"""Several ``rpc_url`` nodes for an EVM chain: anvil directly and through ``EvmProxy`` stand-ins.

A down node leaves the other two to credit a deposit once; a node that
serves a forged block (another hash, a payment to our address in it) is
outvoted, set aside, and nothing is credited.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp import web

from orbchain.testing.api import create_payment, view_payment

from .anvil import PAYER, anvil, open_shop  # noqa: F401 - anvil is a fixture
from .litecoind import NodeGate

FORGED_HASH = "0x" + "f0" * 32
FORGED_TX = "0x" + "fa" * 32


class EvmProxy(NodeGate):
    """anvil's JSON-RPC relayed (``pass``), refused (``down``: a 502) or with one forged block (``lie``)."""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.mode = "pass"
        self.forged: tuple[int, str, int] = (-1, "", 0)  # height, address paid, wei

    async def _handle(self, request: web.Request) -> web.Response:
        if self.mode == "down":
            return web.Response(status=502, text="Bad Gateway")
        relayed = await super()._handle(request)
        if self.mode != "lie":
            return relayed
        calls, answer = json.loads(await request.read()), json.loads(relayed.body)
        if isinstance(calls, list):
            return web.json_response([self._forge(c, a) for c, a in zip(calls, answer)])
        return web.json_response(self._forge(calls, answer))

    def _forge(self, call: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
        height, address, wei = self.forged
        method, params = call["method"], call.get("params", [])
        if method == "eth_getBlockByNumber" and params[0] == hex(height):
            block = dict(answer["result"], hash=FORGED_HASH)
            if params[1]:
                block["transactions"] = [*block["transactions"], {
                    "hash": FORGED_TX, "from": PAYER, "to": address, "value": hex(wei), "blockHash": FORGED_HASH,
                    "blockNumber": hex(height), "input": "0x"}]
            return {**answer, "result": block}
        if method == "eth_getTransactionReceipt" and params[0] == FORGED_TX:
            return {"jsonrpc": "2.0", "id": call["id"], "result": {
                "transactionHash": FORGED_TX, "status": "0x1", "blockHash": FORGED_HASH, "blockNumber": hex(height),
                "logs": []}}
        if method == "eth_getLogs" and params[0].get("blockHash") == FORGED_HASH:
            return {"jsonrpc": "2.0", "id": call["id"], "result": []}  # anvil knows no such block
        return answer


@pytest.fixture
async def proxies():
    made: list[EvmProxy] = []

    async def make(upstream: str) -> EvmProxy:
        proxy = EvmProxy(upstream)
        await proxy.start()
        made.append(proxy)
        return proxy

    yield make
    for proxy in made:
        await proxy.close()


async def _status(shop, track_id: str) -> str:
    return (await view_payment(shop.client, shop.merchant, track_id))["status"]


async def _deposits(shop) -> int:
    return int(await shop.gateway.db.fetch_val("SELECT COUNT(*) FROM deposits WHERE chain = 'ethereum'"))


async def test_a_node_down_and_the_other_two_credit_once(anvil, make_client, make_config, proxies):  # noqa: F811
    flaky, relay = await proxies(anvil.url), await proxies(anvil.url)
    shop = await open_shop(anvil, make_client, make_config, rpc_url=[flaky.url, anvil.url, relay.url],
                           timeout_seconds=2)
    payment = await create_payment(shop.client, shop.merchant, "ETH", "0.5")
    flaky.mode = "down"
    anvil.send(PAYER, payment["address"], value=5 * 10**17)
    await shop.mine(11)
    assert await _status(shop, payment["track_id"]) == "Paid"
    assert [s.state for s in shop.adapter.node_states()] == ["down", "up", "up"]
    flaky.mode = "pass"
    await shop.mine(1)  # probes the down node aside
    await shop.adapter.nodes.nodes[0].probe
    assert [s.state for s in shop.adapter.node_states()] == ["up", "up", "up"]
    assert await _deposits(shop) == 1


async def test_a_node_serving_a_forged_block_credits_nothing_and_is_set_aside(
        anvil, make_client, make_config, proxies):  # noqa: F811
    liar, relay = await proxies(anvil.url), await proxies(anvil.url)
    shop = await open_shop(anvil, make_client, make_config, rpc_url=[liar.url, anvil.url, relay.url])
    payment = await create_payment(shop.client, shop.merchant, "ETH", "0.5")
    liar.mode, liar.forged = "lie", (anvil.height() + 1, payment["address"], 5 * 10**17)
    for _ in range(3):
        await shop.mine(6)
    assert [s.state for s in shop.adapter.node_states()] == ["set aside", "up", "up"]
    assert await _status(shop, payment["track_id"]) == "Waiting"
    assert await _deposits(shop) == 0
