"""Issue 46 item 4: a merchant's underpayment tolerance (plugins/tolerance), on devnet, on both databases.

Before it, an invoice a rounding wallet left a little short stayed Paying and then expired. Now a payment
short by no more than the merchant's percentage, or the absolute amount set for its coin, is Paid once the
money is credited; a deposit still confirming covers nothing; the form refuses what is not a tolerance.
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
    keys = await visitor.sign_up("tolerant@example.com")
    return client, visitor, {"merchant_api_key": keys["merchant_api_key"]}, Devnet(client)


async def paid_short(client, key, devnet, sent: str, *, mine: bool = True) -> str:
    status, body = await api(client, "POST", "/v1/payment/white-label", key, json={"currency": "BTC", "amount": "0.01"})
    assert status == 200, body
    await devnet.pay("BTC", body["data"]["address"], sent)
    if mine:
        await devnet.mine(2)
    status, view = await api(client, "GET", f"/v1/payment/{body['data']['track_id']}", key)
    return view["data"]["status"]


async def test_a_payment_short_within_the_tolerance_is_paid(shop):
    client, visitor, key, devnet = shop
    assert await paid_short(client, key, devnet, "0.0099") == "Paying"  # no tolerance: as before
    await visitor.get("/app/tolerance")
    await visitor.submit("/app/tolerance", {"percent": "1"})
    assert await paid_short(client, key, devnet, "0.0099") == "Paid"  # 1 % short
    assert await paid_short(client, key, devnet, "0.00989999") == "Paying"  # one satoshi more is not
    assert await paid_short(client, key, devnet, "0.0099", mine=False) == "Paying"  # unconfirmed covers nothing
    await visitor.get("/app/tolerance")
    await visitor.submit("/app/tolerance", {"percent": "0", "absolute_BTC": "0.0003"})
    assert await paid_short(client, key, devnet, "0.0097") == "Paid"  # 3 % short, within 0.0003 BTC
    page = await visitor.get("/app/tolerance")
    assert 'name="absolute_BTC" inputmode="decimal" maxlength="40" value="0.0003"' in page


@pytest.mark.parametrize("fields, problem", [
    ({"percent": "7"}, "must be between 0 and 5"),
    ({"percent": "abc"}, "must be a number"),
    ({"percent": "0.125"}, "at most two decimals"),
    ({"percent": "1", "absolute_BTC": "-1"}, "absolute_BTC"),
])
async def test_the_form_refuses_what_is_not_a_tolerance_and_changes_nothing(shop, fields, problem):
    client, visitor, _, _ = shop
    await visitor.get("/app/tolerance")
    await visitor.submit("/app/tolerance", {"percent": "0.5"})
    await visitor.get("/app/tolerance")
    response = await visitor.submit("/app/tolerance", fields, expect=400)
    assert problem.lower() in (await response.text()).lower()
    gateway = client.app[GATEWAY]
    assert await gateway.db.fetch_val("SELECT percent_bp FROM payment_tolerance") == 50
