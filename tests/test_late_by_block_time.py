"""Lateness is judged by the block's own time, not the scanner's clock (issue 46 item 4), devnet and litecoind.

A payment mined before its expiry but scanned after it (the scanner or its
node was away, and the gateway's clock already expired the payment) ends
Paid; a deposit mined after the expiry stays a late deposit (credited, no
payment attached).
"""

from __future__ import annotations

from orbchain.chains.bitcoin import BitcoinAdapter
from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.core.types.views import deposit_view_of
from orbchain.core.watching.deposits import expire_payments
from orbchain.core.watching.scanner import scan_chain
from orbchain.web.keys import GATEWAY

from .litecoind import faucet, litecoind_node  # noqa: F401 - session fixtures
from .support import Devnet, api, signup

LTC = 100_000_000


async def white_label(client, merchant, amount: str, currency: str, **extra):
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": currency, "amount": amount, **extra})
    assert status == 200, body
    return body["data"]


async def payment(client, merchant, track_id):
    return (await api(client, "GET", f"/v1/payment/{track_id}", merchant.merchant_key))[1]["data"]


async def deposits_at(client, merchant, address):
    body = (await api(client, "GET", "/v1/deposits", merchant.merchant_key, params={"address": address}))[1]
    return body["data"]["deposits"]


async def test_devnet_a_payment_mined_in_time_and_scanned_after_its_expiry_ends_paid(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, plugin={"devnet": {"block_seconds": 1}}))
    merchant = await signup(client)
    devnet = Devnet(client)
    on_time = await white_label(client, merchant, "0.01", "BTC", lifetime=1)
    late = await white_label(client, merchant, "0.01", "BTC", lifetime=1)
    coin = devnet.gateway.coins.require("BTC")
    await devnet.chain.pay(coin, on_time["address"], coin.to_units("0.01"))  # the scanner is away
    await devnet.chain.mine(1)
    devnet.gateway.clock = lambda: on_time["expires_at"] + 600
    assert await expire_payments(devnet.gateway) == 2  # by the gateway's clock both expired
    await devnet.chain.pay(coin, late["address"], coin.to_units("0.01"))  # truly late: after the expiry
    await devnet.chain.mine(2)
    await devnet.scan()
    view = await payment(client, merchant, on_time["track_id"])
    assert view["status"] == "Paid" and [t["status"] for t in view["transactions"]] == ["CREDITED"]
    assert (await payment(client, merchant, late["track_id"]))["status"] == "Expired"
    [late_deposit] = await deposits_at(client, merchant, late["address"])
    assert late_deposit["track_id"] is None and late_deposit["status"] == "Credited"
    row = await devnet.gateway.db.fetch_one("SELECT * FROM deposits WHERE address = :a", {"a": late["address"]})
    assert deposit_view_of(devnet.gateway, row).late_for == late["track_id"]  # attached as late, never counted
    on_time_row = await devnet.gateway.db.fetch_one("SELECT late_for FROM deposits WHERE address = :a",
                                                    {"a": on_time["address"]})
    assert on_time_row["late_for"] is None


async def test_litecoind_a_payment_mined_in_time_and_scanned_after_its_expiry_ends_paid(
        make_client, make_config, litecoind_node, faucet):  # noqa: F811 - the fixtures
    client = await make_client(make_config(scheduler={"enabled": False},
                                           plugin={"bitcoin": {"LTC": litecoind_node.plugin_block()}}),
                               get_plugin_manager(blocked=["devnet"]))
    gateway = client.app[GATEWAY]
    adapter: BitcoinAdapter = gateway.chains.get("litecoin")
    merchant = await signup(client, "late-shop@example.com")
    await scan_chain(gateway, adapter)
    wl = await white_label(client, merchant, "0.1", "LTC", lifetime=30)
    block_time_before = int(litecoind_node.call("getblockheader", litecoind_node.call("getbestblockhash"))["time"])
    faucet.pay(wl["address"], LTC // 10)
    faucet.mine(6)  # mined now (regtest block time: the wall clock), long before the 30-minute expiry
    mined = litecoind_node.call("getblockheader", litecoind_node.call("getbestblockhash"))
    assert block_time_before <= int(mined["time"]) < wl["expires_at"]
    gateway.clock = lambda: wl["expires_at"] + 3600  # the scanner's node came back an hour after the expiry
    assert await expire_payments(gateway) == 1
    assert (await payment(client, merchant, wl["track_id"]))["status"] == "Expired"
    await scan_chain(gateway, adapter)
    view = await payment(client, merchant, wl["track_id"])
    assert view["status"] == "Paid", view
