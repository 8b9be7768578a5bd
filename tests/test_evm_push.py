"""EVM push against a real anvil: eth_subscribe newHeads wakes the scan, a lost node ends push, and a node
stopped and restarted while payments arrive still credits every deposit exactly once."""

from __future__ import annotations

import asyncio
import signal

import pytest

from orbchain.chains.evm.adapter import EvmAdapter
from orbchain.chains.evm.settings import ChainSettings
from orbchain.core.types.chains import Capability, ChainUnavailable, check_capabilities
from orbchain.core.ledger import book as ledger
from orbchain.core.ledger.accounts import merchant_available

from .anvil import CHAIN_ID, PAYER, anvil, launch_anvil, open_shop  # noqa: F401 - anvil is a fixture
from .push_support import Watch, until
from .support import api, free_port

PAID_WEI = 10**16  # 0.01 ETH per payment
CREDITED_WEI = 99 * 10**14  # after the merchant's 1% fee


async def _payment(shop, amount: str = "0.01") -> dict:
    status, body = await api(shop.client, "POST", "/v1/payment/white-label", shop.merchant.merchant_key,
                             json={"currency": "ETH", "amount": amount})
    assert status == 200, body
    return body["data"]


async def _status(shop, track_id: str) -> str:
    return (await api(shop.client, "GET", f"/v1/payment/{track_id}", shop.merchant.merchant_key))[1]["data"]["status"]


async def _subscribed(watch: Watch, node) -> None:
    """Mine until a head was heard: the subscription is live (anvil mines only when asked)."""
    await until(lambda: bool(watch.heard), "the first newHeads notification", step=lambda: node.mine(1))


def _adapter(node) -> EvmAdapter:
    settings = ChainSettings(chain="ethereum", rpc_url=node.url, chain_id=CHAIN_ID, ws_url=node.ws_url,
                             timeout_seconds=5)
    return EvmAdapter(None, settings, "ETH", {})  # push reads no database


async def test_a_mined_payment_is_heard_and_scanned_at_once(anvil, make_client, make_config):  # noqa: F811
    """Break caught: push never calling heard, or calling it for something other than a new block."""
    shop = await open_shop(anvil, make_client, make_config, ws_url=anvil.ws_url, scan_seconds=3600)
    assert shop.adapter.supports(Capability.PUSH)
    check_capabilities(shop.adapter)
    payment = await _payment(shop)
    # The poll is an hour away: only the notification can make this scan happen.
    async with Watch(shop.gateway, shop.adapter, poll=3600) as watch:
        await _subscribed(watch, anvil)
        watch.heard.clear()
        anvil.send(PAYER, payment["address"], value=PAID_WEI)  # automine: one new block
        await until(lambda: watch.heard == ["block"], "one heard('block') for the mined payment")
        await until(lambda: _is(shop, payment, "Paying"), "the payment to show Paying")
        anvil.mine(3)
        await until(lambda: len(watch.heard) == 4, "one heard('block') per mined block")
    assert set(watch.heard) == {"block"} and watch.losses == 0


async def _is(shop, payment: dict, status: str) -> bool:
    return await _status(shop, payment["track_id"]) == status


async def test_push_is_declared_only_with_ws_url(make_config):
    from orbchain.core.contract.plugins import get_plugin_manager
    from orbchain.core.startup import build_gateway

    block = {"rpc_url": "http://127.0.0.1:9", "chain_id": 1}
    config = make_config(plugin={"evm": {"ethereum": block, "bsc": {**block, "chain_id": 56,
                                                                     "ws_url": "ws://127.0.0.1:9"}}})
    gateway = build_gateway(config, get_plugin_manager(blocked=["devnet"]))
    assert not gateway.chains.get("ethereum").supports(Capability.PUSH)
    assert gateway.chains.get("bsc").supports(Capability.PUSH)


async def test_a_node_that_dies_ends_push_and_cancelling_closes_the_socket():
    """Break caught: push hanging forever on a dead node (the core would never reconnect)."""
    node = launch_anvil()
    adapter = _adapter(node)
    try:
        heard: list[str] = []
        task = asyncio.create_task(adapter.push(heard.append))
        await until(lambda: bool(heard), "the first head", step=lambda: node.mine(1))
        node.process.kill()
        with pytest.raises(ChainUnavailable, match="WebSocket closed"):
            await asyncio.wait_for(task, 30)
        with pytest.raises(ChainUnavailable, match="WebSocket failed"):  # nothing listens any more
            await asyncio.wait_for(adapter.push(heard.append), 30)
    finally:
        node.stop()
        await adapter.close()


async def test_restarting_the_node_while_payments_arrive_credits_each_deposit_once(make_client, make_config,
                                                                                   tmp_path):
    """Break caught: a deposit lost or credited twice across a node restart and push reconnection.

    anvil keeps its chain across a restart only with ``--state`` (dumped when it
    stops on SIGTERM, loaded at start): the same blocks and hashes come back, as
    with a real node's database. The poll (every second) and the reconnecting
    push both drive the scan; the node is stopped between payments.
    """
    port, state = free_port(), str(tmp_path / "anvil-state.json")
    node = launch_anvil(port, "--state", state)
    try:
        shop = await open_shop(node, make_client, make_config, ws_url=node.ws_url, scan_seconds=1)
        payments = [await _payment(shop) for _ in range(6)]
        async with Watch(shop.gateway, shop.adapter, poll=1.0) as watch:
            await _subscribed(watch, node)
            for payment in payments[:3]:
                node.send(PAYER, payment["address"], value=PAID_WEI)
            await until(lambda: _is(shop, payments[0], "Paying"), "the first payment seen before the restart")
            node.process.send_signal(signal.SIGTERM)  # anvil writes its state and exits
            await asyncio.to_thread(node.process.wait, 30)
            await until(lambda: watch.losses >= 1, "push to report the lost stream")
            heard_before = len(watch.heard)
            node = shop.node = launch_anvil(port, "--state", state)
            for payment in payments[3:]:  # at once, while push may still be reconnecting
                node.send(PAYER, payment["address"], value=PAID_WEI)
            await until(lambda: len(watch.heard) > heard_before, "push to reconnect and hear new blocks",
                        step=lambda: node.mine(1))
            node.mine(12)
            for payment in payments:
                await until(lambda p=payment: _is(shop, p, "Paid"), f"payment {payment['track_id']} Paid")
        deposits = await shop.gateway.db.fetch_all("SELECT address, tx_hash, amount FROM deposits")
        assert sorted(d["address"] for d in deposits) == sorted(p["address"] for p in payments)
        assert len({d["tx_hash"] for d in deposits}) == 6
        balance = await ledger.balance(shop.gateway.db, merchant_available(shop.merchant.merchant_id), "ETH")
        assert balance == 6 * CREDITED_WEI
    finally:
        node.stop()
