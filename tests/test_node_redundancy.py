"""Several node URLs for one chain, against a real Litecoin Core regtest node (``tests/litecoind.py``).

Three URLs reach the same litecoind: directly, and through ``NodeProxy``
stand-ins that can be down (a load balancer's 502), hang, fall behind or lie
(serve a fabricated block with a payment to our address). The gateway must
credit real deposits once while one node fails, and nothing on a liar's word.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from aiohttp import web

from orbchain.core.health.readiness import check_readiness
from orbchain.core.watching.scanner import scan_job

from .litecoind import NodeGate, faucet, litecoind_node  # noqa: F401 - session fixtures
from .support import WebhookReceiver
from .test_bitcoin_litecoind import LTC, Shop, make_shop

FORGED_HASH = "f0" * 32
FORGED_TXID = "fa" * 32


class NodeProxy(NodeGate):
    """litecoind's JSON-RPC behind a switch: ``pass``, ``down``, ``hang``, ``behind`` or ``lie``.

    ``behind`` reports the tip ``lag`` blocks lower and refuses blocks above it, and knows no header above it
    either (a node cut off from its peers, which only the quorum shows behind; one that holds the headers is
    refused as ``behind_peers``: tests/test_node_identity.py);
    ``lie`` answers a forged block at ``forged_height`` (above the tip, or in
    place of a real one) paying ``forged_pay`` = (address, LTC amount).
    """

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.mode = "pass"
        self.lag = 5
        self.forged_height = -1
        self.forged_pay: tuple[str, str] = ("", "0")

    async def _call(self, method: str, *params: Any) -> Any:
        answer = await self._client.post(self.upstream, json={"jsonrpc": "1.0", "id": 1, "method": method,
                                                              "params": list(params)})
        return json.loads(answer.content)["result"]  # floats repr back exactly: this stand-in only relays

    async def _handle(self, request: web.Request) -> web.Response:
        if self.mode == "down":
            return web.Response(status=502, text="Bad Gateway")
        self.hanging = {"*"} if self.mode == "hang" else set()
        payload = json.loads(await request.read())
        if isinstance(payload, dict) and self.mode in ("behind", "lie"):
            result = await self._rewrite(payload["method"], payload.get("params", []))
            if result is not None:
                return web.Response(text=json.dumps({"result": result[0], "error": result[1], "id": payload["id"]}),
                                    content_type="application/json")
        return await super()._handle(request)

    async def _rewrite(self, method: str, params: list[Any]) -> tuple[Any, Any] | None:
        """(result, error) for the calls this mode answers itself; None passes the call through."""
        tip = int(await self._call("getblockcount"))
        if self.mode == "behind":
            shown = tip - self.lag
            if method == "getblockchaininfo":
                return {**await self._call("getblockchaininfo"), "blocks": shown, "headers": shown,
                        "bestblockhash": await self._call("getblockhash", shown)}, None
            if method == "getblockhash" and params[0] > shown:
                return None, {"code": -8, "message": "Block height out of range"}
            return None
        forged = self.forged_height
        if method == "getblockchaininfo" and forged >= tip:
            return {**await self._call("getblockchaininfo"), "blocks": forged, "bestblockhash": FORGED_HASH}, None
        if method == "getblockhash" and params[0] == forged:
            return FORGED_HASH, None
        if method == "getblock" and params[0] == FORGED_HASH:
            base = await self._call("getblock", await self._call("getblockhash", min(forged, tip)), 2)
            address, amount = self.forged_pay
            payment = {"txid": FORGED_TXID, "vin": [], "vout": [
                {"n": 0, "value": float(amount), "scriptPubKey": {"address": address, "type": "witness_v0_keyhash"}}]}
            parent = base["previousblockhash"] if forged <= tip else base["hash"]
            return {**base, "height": forged, "hash": FORGED_HASH, "previousblockhash": parent,
                    "tx": [*base["tx"], payment]}, None
        return None


@pytest.fixture
async def proxies(litecoind_node):  # noqa: F811 - the session fixture
    made = [NodeProxy(litecoind_node.url) for _ in range(2)]
    for proxy in made:
        await proxy.start()
    yield made
    for proxy in made:
        await proxy.close()


class ThreeNodes:
    """The ``[plugin.bitcoin.LTC]`` block naming ``urls`` (default quorum: two of three)."""

    def __init__(self, node, urls: list[str], timeout: int) -> None:
        self.node, self.urls, self.timeout = node, urls, timeout

    def plugin_block(self) -> dict[str, Any]:
        return self.node.plugin_block(rpc_url=self.urls, rpc_timeout_seconds=self.timeout)


@pytest.fixture
async def open_three(make_client, make_config, litecoind_node, faucet, receiver):  # noqa: F811
    async def open_shop(*urls: str, timeout: int = 30) -> Shop:
        return await make_shop(make_client, make_config, ThreeNodes(litecoind_node, list(urls), timeout), faucet,
                               receiver)
    return open_shop


@pytest.fixture
async def receiver():
    hook = WebhookReceiver()
    yield hook
    await hook.close()


async def probed(shop: Shop) -> None:
    """Wait for the background probe of a down first node, which the scan itself never waits for."""
    probe = shop.adapter.nodes.nodes[0].probe
    if probe is not None:
        await probe


def node_states(shop: Shop) -> list[str]:
    return [s.state for s in shop.adapter.node_states()]


async def deposits(shop: Shop) -> int:
    return int(await shop.gateway.db.fetch_val("SELECT COUNT(*) FROM deposits WHERE chain = 'litecoin'"))


async def test_one_node_down_hanging_or_behind_and_the_others_credit_once(
        open_three, litecoind_node, proxies):  # noqa: F811
    flaky, honest = proxies
    shop = await open_three(flaky.url, litecoind_node.url, honest.url, timeout=2)
    payment = await shop.payment("0.5")
    flaky.mode = "down"
    shop.faucet.pay(payment["address"], LTC // 2)
    await shop.scan()  # the mempool read fails over past the down node
    assert (await shop.status(payment["track_id"]))["status"] == "Paying"
    await shop.mine(2)
    assert node_states(shop) == ["down", "up", "up"]
    flaky.mode = "hang"
    await shop.mine(2)  # the down node is probed aside: the scan does not wait for it
    await probed(shop)
    ready = (await check_readiness(shop.gateway)).as_dict()["chains"][0]
    assert ready["reachable"] and [n["state"] for n in ready["nodes"]] == ["down", "up", "up"]
    assert ready["nodes"][0]["error"] == "no answer in 2 s"
    flaky.mode = "behind"
    flaky.release()  # the calls it held fail
    await probed(shop)
    await shop.mine(2)
    await probed(shop)  # it answers again, lower than the others
    assert node_states(shop) == ["behind", "up", "up"]
    tip = litecoind_node.height()
    assert [s.height for s in shop.adapter.node_states()] == [tip - flaky.lag, tip, tip]
    paid = await shop.status(payment["track_id"])
    assert paid["status"] == "Paid" and paid["transactions"][0]["confirmations"] == 6
    flaky.mode = "pass"
    await shop.mine(1)
    assert node_states(shop) == ["up", "up", "up"]
    assert await shop.balance() == {"LTC": "0.495"} and await deposits(shop) == 1

    flaky.mode = "down"
    await scan_job(shop.adapter)(shop.gateway)  # the scheduler's job: it also sets the node metrics
    metrics = shop.gateway.metrics.exposition().decode()
    node = f'chain="litecoin",node="{flaky.url}"'
    assert f'orbchain_chain_node_state{{{node},state="down"}} 1.0' in metrics
    assert f'orbchain_chain_node_state{{{node},state="up"}} 0.0' in metrics
    assert f'orbchain_chain_node_reported_height{{{node}}} {float(tip + 1)}' in metrics


async def test_two_nodes_down_stop_the_scan_and_it_resumes_without_double_credit(
        open_three, litecoind_node, proxies):  # noqa: F811
    first, second = proxies
    shop = await open_three(first.url, second.url, litecoind_node.url)
    payment = await shop.payment("0.25")
    shop.faucet.pay(payment["address"], LTC // 4)
    first.mode = second.mode = "down"
    shop.faucet.mine(6)
    with pytest.raises(Exception, match="1 of 3 node"):
        await shop.scan()  # one node's word is not a quorum of two
    assert (await shop.status(payment["track_id"]))["status"] != "Paid"
    second.mode = "pass"
    await shop.scan()
    await shop.scan()
    assert (await shop.status(payment["track_id"]))["status"] == "Paid"
    assert await shop.balance() == {"LTC": "0.2475"} and await deposits(shop) == 1


async def test_a_lying_node_credits_nothing_and_is_set_aside_once(
        open_three, litecoind_node, proxies, caplog):  # noqa: F811
    liar, honest = proxies
    shop = await open_three(liar.url, litecoind_node.url, honest.url)
    payment = await shop.payment("0.5")
    tip = litecoind_node.height()
    liar.mode, liar.forged_height, liar.forged_pay = "lie", tip + 1, (payment["address"], "0.5")
    with caplog.at_level(logging.WARNING, "orbchain.core.contract.nodes"):
        await shop.scan()  # the liar is ahead with its forged block: no quorum has that height yet
        assert node_states(shop) == ["up", "up", "up"]
        await shop.mine(6)  # the real block at that height has another hash: the liar is outvoted
        for _ in range(3):
            await shop.scan()
    assert node_states(shop) == ["set aside", "up", "up"]
    assert shop.adapter.node_states()[0].error == f"reported the content of block {tip + 1} that the other nodes do not"
    assert (await shop.status(payment["track_id"]))["status"] == "Waiting"
    assert await deposits(shop) == 0 and await shop.balance() == {}
    warnings = [r.getMessage() for r in caplog.records if "set aside" in r.getMessage()]
    assert warnings == [f"litecoin: node {liar.url} reported the content of block {tip + 1}, unlike the quorum"
                        " of 2: set aside for 600 s"]
    forged = await shop.gateway.db.fetch_val("SELECT COUNT(*) FROM chain_blocks WHERE hash = :h", {"h": FORGED_HASH})
    assert forged == 0
