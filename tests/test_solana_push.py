"""Solana push: PubSub slotSubscribe against the LiteSVM stand-in's WebSocket (Solana's documented format)."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from orbchain.chains.solana.adapter import SolanaAdapter
from orbchain.chains.solana.settings import SolanaSettings, read_settings
from orbchain.core.contract.chains import Capability, ChainUnavailable, check_capabilities
from orbchain.core.infra.config import ConfigError

from .push_support import Watch, until
from .solana_node import open_solana_shop, running_node

HEADERS = {"x-api-key": "s3cret"}


def _adapter(node, **settings) -> SolanaAdapter:
    return SolanaAdapter(None, SolanaSettings(rpc_url=node.url, ws_url=node.ws_url, timeout_seconds=5, **settings),
                         "SOL")  # push reads no database


def test_ws_url_is_optional_and_must_be_a_websocket():
    assert read_settings({"rpc_url": "http://x"}).ws_url is None
    assert read_settings({"rpc_url": "http://x", "ws_url": "wss://x/ws"}).ws_url == "wss://x/ws"
    with pytest.raises(ConfigError, match=r"plugin\.solana\.ws_url"):
        read_settings({"rpc_url": "http://x", "ws_url": "http://x"})


async def test_the_stand_in_speaks_solanas_pubsub_format():
    """The stand-in against the documented shapes (solana.com/docs/rpc/websocket/slotsubscribe)."""
    async with running_node() as node, aiohttp.ClientSession() as session, session.ws_connect(node.ws_url) as ws:
        await ws.send_json({"jsonrpc": "2.0", "id": 1, "method": "slotSubscribe"})
        assert await ws.receive_json() == {"jsonrpc": "2.0", "result": 0, "id": 1}
        parent = node.tip.slot
        node.skip(1)
        node.produce(1)
        assert await ws.receive_json() == {"jsonrpc": "2.0", "method": "slotNotification", "params": {
            "result": {"parent": parent, "root": node.finalized().slot, "slot": parent + 2}, "subscription": 0}}
        await ws.send_json({"jsonrpc": "2.0", "id": 2, "method": "slotUnsubscribe", "params": [0]})
        assert await ws.receive_json() == {"jsonrpc": "2.0", "result": True, "id": 2}
        await ws.send_json({"jsonrpc": "2.0", "id": 3, "method": "slotUnsubscribe", "params": [0]})
        assert (await ws.receive_json())["error"]["code"] == -32602
        assert not node.slot_subscribers


async def test_each_slot_is_heard_and_a_payment_scanned_at_once(make_config, make_client):
    """Break caught: push never calling heard, or the subscription missing the provider's auth header."""
    async with running_node(required_headers=HEADERS) as node:
        shop = await open_solana_shop(node, make_config, make_client, ws_url=node.ws_url, headers=HEADERS,
                                      scan_seconds=3600)
        assert shop.adapter.supports(Capability.PUSH)
        check_capabilities(shop.adapter)
        payment = await shop.payment()
        # The poll is an hour away: only the notification can make this scan happen.
        async with Watch(shop.gateway, shop.adapter, poll=3600) as watch:
            await until(lambda: bool(node.slot_subscribers), "the adapter to subscribe")
            node.pay(payment["address"], shop.units(payment["pay_amount"]))
            node.produce(1)
            await until(lambda: watch.heard == ["block"], "one heard('block') for the new slot")
            await until(lambda: _status(shop, payment, "Paying"), "the payment to show Paying")
            node.produce(3)
            await until(lambda: len(watch.heard) == 4, "one heard('block') per slot")
        assert node.ws_calls[0] == "slotSubscribe" and watch.losses == 0


async def _status(shop, payment, status: str) -> bool:
    return (await shop.view(payment["track_id"]))["status"] == status


async def test_cancelling_push_unsubscribes_and_closes_the_socket():
    async with running_node() as node:
        adapter = _adapter(node)
        task = asyncio.create_task(adapter.push(lambda _: None))
        await until(lambda: bool(node.slot_subscribers), "the adapter to subscribe")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await until(lambda: not node._sockets, "the node to see the socket closed")
        assert node.ws_calls == ["slotSubscribe", "slotUnsubscribe"] and not node.slot_subscribers


async def test_a_lost_or_refused_stream_ends_push():
    """Break caught: push hanging on a closed socket, or retrying forever inside instead of telling the core."""
    async with running_node(required_headers=HEADERS) as node:
        adapter = _adapter(node, headers=HEADERS)
        task = asyncio.create_task(adapter.push(lambda _: None))
        await until(lambda: bool(node.slot_subscribers), "the adapter to subscribe")
        await node.drop_streams()
        with pytest.raises(ChainUnavailable, match="WebSocket closed"):
            await asyncio.wait_for(task, 30)
        with pytest.raises(ChainUnavailable, match="WebSocket failed"):  # the 401 of a missing API key
            await asyncio.wait_for(_adapter(node).push(lambda _: None), 30)
