"""Issue 46 item 4: a merchant's speed policy, confirmations scaled by value (plugins/speed), devnet, both databases.

The merchant sets tiers per coin; a deposit is credited at the confirmations of the first tier its value fits
(its payment's whole amount when larger: splitting a large payment does not buy speed), above every tier at the
merchant's usual setting, and never below the coin's safe floor, which the form refuses to go under.
"""

from __future__ import annotations

import pytest

from orbchain.web.keys import GATEWAY

from .dashboard_support import Visitor
from .support import Devnet, api


@pytest.fixture
async def shop(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, plugin={"devnet": {"block_seconds": 1}}))
    visitor = Visitor(client)
    keys = await visitor.sign_up("speedy@example.com")
    return client, visitor, {"merchant_api_key": keys["merchant_api_key"]}, Devnet(client)


async def threshold_of(client, key, devnet, amount: str, sent: str | None = None) -> int:
    """The confirmations the deposit paying a new ``amount`` BTC payment (with ``sent``) must reach."""
    status, body = await api(client, "POST", "/v1/payment/white-label", key, json={"currency": "BTC", "amount": amount})
    assert status == 200, body
    tx = await devnet.pay("BTC", body["data"]["address"], sent or amount)
    return int(await devnet.gateway.db.fetch_val("SELECT threshold FROM deposits WHERE tx_hash = :h", {"h": tx}))


async def test_confirmations_scale_with_value_within_the_floor(shop):
    client, visitor, key, devnet = shop
    coin = client.app[GATEWAY].coins.require("BTC")
    usual = await threshold_of(client, key, devnet, "0.001")
    assert usual == max(coin.confirmations, coin.default_threshold)  # no policy: as before
    await visitor.get("/app/speed")
    await visitor.submit("/app/speed", {"tiers_BTC": f"0.005:{coin.confirmations}, 1:{usual + 4}"})
    assert await threshold_of(client, key, devnet, "0.001") == coin.confirmations  # small: fast
    assert await threshold_of(client, key, devnet, "0.5") == usual + 4  # large: more blocks
    assert await threshold_of(client, key, devnet, "0.5", sent="0.001") == usual + 4  # a split pays no faster
    assert await threshold_of(client, key, devnet, "2") == usual  # above every tier: the usual setting
    page = await visitor.get("/app/speed")
    assert f'value="0.005:{coin.confirmations}, 1:{usual + 4}"' in page

    status, body = await api(client, "POST", "/v1/payment/white-label", key, json={"currency": "BTC", "amount": "0.001"})
    await devnet.pay("BTC", body["data"]["address"], "0.001")
    await devnet.mine(coin.confirmations)
    status, view = await api(client, "GET", f"/v1/payment/{body['data']['track_id']}", key)
    assert view["data"]["status"] == "Paid"


@pytest.mark.parametrize("tiers, problem", [
    ("0.1:0", "safe"),
    ("0.1", "amount:confirmations"),
    ("abc:2", "speed-BTC"),
])
async def test_the_form_refuses_what_is_not_a_speed_policy_and_changes_nothing(shop, tiers, problem):
    client, visitor, _, _ = shop
    await visitor.get("/app/speed")
    await visitor.submit("/app/speed", {"tiers_BTC": "0.5:6"})
    await visitor.get("/app/speed")
    await visitor.submit("/app/speed", {"tiers_BTC": tiers}, expect=400)
    assert problem in visitor.page
    rows = await client.app[GATEWAY].db.fetch_all("SELECT up_to, confirmations FROM speed_tiers")
    assert [(client.app[GATEWAY].db.to_int(r["up_to"]), int(r["confirmations"])) for r in rows] == [(50_000_000, 6)]
