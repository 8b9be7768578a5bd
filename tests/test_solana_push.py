"""Solana push: PubSub slotSubscribe against the LiteSVM stand-in's WebSocket, whose messages solders writes.

The stand-in's messages are solders' (Agave's RPC types); the adapter also
meets Solana's published examples (tests/upstream/solana_pubsub.json) over a
socket, and tests/unit/test_solana_pubsub.py holds its parser to solders.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from solders.rpc.responses import (
    SlotInfo, SlotNotification, SubscriptionError, SubscriptionResult, UnsubscribeResult, parse_websocket_message,
)

from orbchain.chains.solana.adapter import SolanaAdapter
from orbchain.chains.solana.settings import SolanaSettings, read_settings
from orbchain.core.types.chains import Capability, ChainUnavailable, check_capabilities
from orbchain.core.infra.config import ConfigError

from .push_support import Watch, until
from .solana_node import open_solana_shop, running_node

HEADERS = {"x-api-key": "s3cret"}
PUBSUB = json.loads((Path(__file__).resolve().parent / "upstream" / "solana_pubsub.json").read_text())


def _adapter(node, **settings) -> SolanaAdapter:
    return SolanaAdapter(None, SolanaSettings(rpc_url=node.url, ws_url=node.ws_url, timeout_seconds=5, **settings),
                         "SOL")  # push reads no database


def test_ws_url_is_optional_and_must_be_a_websocket():
    assert read_settings({"rpc_url": "http://x"}).ws_url is None
    assert read_settings({"rpc_url": "http://x", "ws_url": "wss://x/ws"}).ws_url == "wss://x/ws"
    with pytest.raises(ConfigError, match=r"plugin\.solana\.ws_url"):
        read_settings({"rpc_url": "http://x", "ws_url": "http://x"})


async def test_the_stand_in_speaks_solanas_pubsub_format():
    """Every message of the stand-in, read by solders (Agave's RPC types), is the one Solana would send."""
    async with running_node() as node, aiohttp.ClientSession() as session, session.ws_connect(node.ws_url) as ws:
        await ws.send_json({"jsonrpc": "2.0", "id": 1, "method": "slotSubscribe"})
        assert parse_websocket_message(await ws.receive_str()) == [SubscriptionResult(id=1, result=0)]
        parent = node.tip.slot
        node.skip(1)
        node.produce(1)
        [note] = parse_websocket_message(await ws.receive_str())  # solders' SlotNotification has no field-wise ==
        assert isinstance(note, SlotNotification) and note.subscription == 0
        assert note.result == SlotInfo(slot=parent + 2, parent=parent, root=node.finalized().slot)
        await ws.send_json({"jsonrpc": "2.0", "id": 2, "method": "slotUnsubscribe", "params": [0]})
        assert parse_websocket_message(await ws.receive_str()) == [UnsubscribeResult(id=2, result=True)]
        await ws.send_json({"jsonrpc": "2.0", "id": 3, "method": "slotUnsubscribe", "params": [0]})
        [refused] = parse_websocket_message(await ws.receive_str())
        assert isinstance(refused, SubscriptionError) and refused.id == 3
        assert not node.slot_subscribers


async def test_solanas_published_messages_wake_the_adapter():
    """The adapter's push against a socket that sends what Solana's docs publish (tests/upstream), not our node."""
    published = {m["source"] + " " + m["kind"]: m["raw"] for m in PUBSUB["messages"]}
    requests: list[dict] = []

    async def replay(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for message in ws:
            requests.append(json.loads(message.data))
            if requests[-1]["method"] == "slotSubscribe":
                await ws.send_str(published["solana.com subscribed"])
                await ws.send_str(published["solana.com notification"])
                await ws.send_str(published["alchemy notification"])
        return ws

    app = web.Application()
    app.router.add_get("/", replay)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    heard: list[str] = []
    adapter = SolanaAdapter(None, SolanaSettings(rpc_url="http://127.0.0.1:1/",
                                                 ws_url=f"ws://127.0.0.1:{runner.addresses[0][1]}/",
                                                 timeout_seconds=5), "SOL")
    task = asyncio.create_task(adapter.push(heard.append))
    try:
        await until(lambda: len(heard) == 2, "a wake for each published notification")
        assert heard == ["block", "block"] and requests[0]["method"] == "slotSubscribe"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await runner.cleanup()


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
