"""The ``loyalty`` plugin end to end, on both databases, as its author would test it.

Only ``orbchain.testing`` (fixtures, ``signup``, ``api``, ``pay_on_devnet``)
and the documented plugin API: payments are paid on the devnet and seen by
the core scanner, the plugin is installed through its entry point.
"""

from __future__ import annotations

import html
import re

import pytest

from orbchain.api import GATEWAY, PLATFORM_FEES, ledger_balance, merchant_available, world
from orbchain.testing import api, bearer, pay_on_devnet, signup

from . import plugin

MODULE = "tests.third_party.loyalty.plugin"
PASSWORD = "s3cret-pass"  # orbchain.testing.signup's default


@pytest.fixture
async def shop(install_plugin, make_client, make_config):
    install_plugin("loyalty", MODULE)
    client = await make_client(make_config(scheduler={"enabled": False}))
    return client, await signup(client, "loyal@example.com", PASSWORD)


async def scoped_key(client, merchant, *scopes: str) -> dict[str, str]:
    response = await client.post("/dashboard/api-keys", json={"label": "loyalty", "scopes": list(scopes)},
                                 headers=bearer(merchant.token))
    assert response.status == 200, await response.text()
    return {"merchant_api_key": (await response.json())["data"]["api_key"]}


async def paid(client, merchant, amount: str) -> str:
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": amount})
    assert status == 200, body
    record = await pay_on_devnet(client, body["data"])
    assert record.status == "Paid"
    return record.track_id


async def test_a_paid_payment_earns_one_percent_cashback_once(shop):
    client, merchant = shop
    key = await scoped_key(client, merchant, plugin.SCOPE)
    first = await paid(client, merchant, "0.001")  # 100 000 sat: 1 000 sat cashback
    status, body = await api(client, "GET", plugin.ROUTE, key)
    assert status == 200 and body["data"] == {"balances": [{"coin": "BTC", "amount": "0.00001"}]}, body

    # A second payment: its blocks rescan the first deposit, which is not credited (nor cashed back) again.
    await paid(client, merchant, "0.00123457")  # 1 234.57 sat of cashback, rounded down to 1 234
    _, body = await api(client, "GET", plugin.ROUTE, key)
    assert body["data"]["balances"] == [{"coin": "BTC", "amount": "0.00002234"}]

    # Double entry: what came in from the devnet is the merchant's net, the platform's fee less the cashback,
    # and the cashback; the plugin read its account with the documented balance read.
    db = client.app[GATEWAY].db
    _, balance = await api(client, "GET", "/v1/general/account/balance", merchant.general_key)
    assert balance["data"]["balances"] == [{"coin": "BTC", "amount": "0.00221223"}]  # 223 457 less the 1 % fees (1 000 + 1 234)
    assert -await ledger_balance(db, world("devnet"), "BTC") == 223_457
    assert await ledger_balance(db, plugin.account(merchant.merchant_id), "BTC") == 2_234
    assert await ledger_balance(db, merchant_available(merchant.merchant_id), "BTC") == 221_223
    assert await ledger_balance(db, PLATFORM_FEES, "BTC") == 0  # the fee paid the cashback whole

    # One loyalty.cashback webhook per credit (the merchant has no webhook URL: logged, never sent).
    _, logs = await api(client, "GET", "/dashboard/webhook-logs", merchant.jwt)
    cashbacks = [entry for entry in logs["data"]["logs"] if entry.get("event_type") == plugin.EVENT]
    assert len(cashbacks) == 2, logs
    assert first in str(cashbacks)


async def test_the_route_needs_its_scope_and_is_documented(shop):
    client, merchant = shop
    status, body = await api(client, "GET", plugin.ROUTE, await scoped_key(client, merchant, plugin.SCOPE))
    assert status == 200 and body["data"] == {"balances": []}, body
    status, body = await api(client, "GET", plugin.ROUTE, await scoped_key(client, merchant, "payment:read"))
    assert status == 403 and body["error"]["type"] == "forbidden", body
    status, _ = await api(client, "GET", plugin.ROUTE, {})
    assert status == 401
    spec = await (await client.get("/openapi.json")).json()
    operation = spec["paths"][plugin.ROUTE]["get"]
    assert plugin.SCOPE in str(operation) and "LoyaltyBalance" in str(operation)


async def sign_in(client, email: str) -> None:
    """The dashboard's own log-in form, as a browser without JavaScript submits it."""
    page = await (await client.get("/app/login")).text()
    token = html.unescape(re.search(r'name="csrf_token" value="([^"]*)"', page).group(1))
    response = await client.post("/app/login", data={"csrf_token": token, "email": email, "password": PASSWORD},
                                 allow_redirects=False)
    assert response.status == 303 and response.headers["Location"] == "/app", await response.text()


async def test_the_dashboard_page_shows_the_cashback_to_the_signed_in_merchant(shop):
    client, merchant = shop
    assert (await client.get(plugin.PAGE, allow_redirects=False)).status == 303  # signed out: to the log-in page
    await paid(client, merchant, "0.002")
    await sign_in(client, "loyal@example.com")
    home = await (await client.get("/app")).text()
    assert f'<a href="{plugin.PAGE}">Loyalty</a>' in home
    response = await client.get(plugin.PAGE)
    page = await response.text()
    assert response.status == 200, page
    assert '<table id="loyalty">' in page and "<td>BTC</td>" in page and "0.00002" in page
