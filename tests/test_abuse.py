"""Abuse that must not slip past a limit (issue 10): coin allowlists, rate-limit identity,
TOTP and login lockouts, framework leaks. Both databases."""

from __future__ import annotations

from typing import Any

import pytest

from orbchain.web.keys import GATEWAY
from tests.support import bearer, signup


async def scoped_key(client: Any, token: str, **fields: Any) -> str:
    body = {"label": "abuse", "scopes": ["payment:create", "payment:read"], **fields}
    response = await client.post("/dashboard/api-keys", json=body, headers=bearer(token))
    assert response.status == 200, await response.text()
    return (await response.json())["data"]["api_key"]


@pytest.fixture
async def quiet_client(make_client, make_config):
    return await make_client(make_config(scheduler={"enabled": False}))


# -- class 6: the coin allowlist bounds every coin a payment can be paid in ----------------


async def test_fiat_invoice_of_an_eth_only_key_is_payable_in_eth_only(quiet_client):
    client = quiet_client
    owner = await signup(client)
    headers = {"merchant_api_key": await scoped_key(client, owner.token, coin_allowlist=["ETH"])}
    refused = await client.post("/v1/payment/white-label", json={"currency": "BTC", "amount": "0.1"}, headers=headers)
    assert refused.status == 403 and (await refused.json())["error"]["code"] == "coin_not_allowed"

    response = await client.post("/v1/payment/invoice", json={"amount": "10", "currency": "USD"}, headers=headers)
    invoice = (await response.json())["data"]
    assert response.status == 200, invoice
    assert invoice["pay_currency"] == "ETH" and invoice["accepted_coins"] == ["ETH"]
    html = await (await client.get(f"/pay/{invoice['track_id']}")).text()
    assert 'name="pay_currency"' not in html and '<option value="BTC"' not in html  # no picker beyond ETH
    switched = await client.get(f"/pay/{invoice['track_id']}?pay_currency=BTC", allow_redirects=False)
    assert switched.status == 303
    after = await client.get(f"/v1/payment/{invoice['track_id']}", headers=headers)
    data = (await after.json())["data"]
    assert data["pay_currency"] == "ETH" and data["address"] == invoice["address"]


async def test_picker_of_an_allowlisted_invoice_offers_only_allowed_coins(quiet_client):
    client = quiet_client
    owner = await signup(client)
    headers = {"merchant_api_key": await scoped_key(client, owner.token, coin_allowlist=["ETH", "LTC"])}
    response = await client.post("/v1/payment/invoice", json={"amount": "10", "currency": "USD"}, headers=headers)
    invoice = (await response.json())["data"]
    assert response.status == 200 and sorted(invoice["accepted_coins"]) == ["ETH", "LTC"]
    html = await (await client.get(f"/pay/{invoice['track_id']}")).text()
    assert '<option value="LTC"' in html and '<option value="ETH"' in html and '<option value="BTC"' not in html
    for coin in ("BTC", "SOL", "USDT_ERC20"):
        await client.get(f"/pay/{invoice['track_id']}?pay_currency={coin}", allow_redirects=False)
        data = (await (await client.get(f"/v1/payment/{invoice['track_id']}", headers=headers)).json())["data"]
        assert data["pay_currency"] in ("ETH", "LTC")
    await client.get(f"/pay/{invoice['track_id']}?pay_currency=LTC", allow_redirects=False)
    data = (await (await client.get(f"/v1/payment/{invoice['track_id']}", headers=headers)).json())["data"]
    assert data["pay_currency"] == "LTC"


async def test_explicit_coins_outside_the_allowlist_are_403(quiet_client):
    client = quiet_client
    owner = await signup(client)
    headers = {"merchant_api_key": await scoped_key(client, owner.token, coin_allowlist=["ETH"])}
    for body in ({"amount": "10", "currency": "USD", "accepted_coins": ["ETH", "BTC"]},
                 {"amount": "10", "currency": "USD", "pay_currency": "BTC"},
                 {"amount": "0.1", "currency": "BTC"}):
        response = await client.post("/v1/payment/invoice", json=body, headers=headers)
        assert response.status == 403, body
        assert (await response.json())["error"]["code"] == "coin_not_allowed"
    # The legacy key has no allowlist: the same fiat invoice offers every accepted coin.
    response = await client.post("/v1/payment/invoice", json={"amount": "10", "currency": "USD"},
                                 headers=owner.merchant_key)
    assert "BTC" in (await response.json())["data"]["accepted_coins"]


async def test_an_allowlist_sharing_no_coin_with_the_account_is_403(quiet_client):
    client = quiet_client
    owner = await signup(client)
    headers = {"merchant_api_key": await scoped_key(client, owner.token, coin_allowlist=["ETH"])}
    changed = await client.put("/dashboard/settings/coins", json={"accepted_coins": ["BTC"]}, headers=owner.jwt)
    assert changed.status == 200
    response = await client.post("/v1/payment/invoice", json={"amount": "10", "currency": "USD"}, headers=headers)
    assert response.status == 403 and (await response.json())["error"]["code"] == "coin_not_allowed"
