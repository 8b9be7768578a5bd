"""The hosted page's checkout aids (issue 32 item 7), both databases: each chain's "Open in wallet" URI (the
QR's text), copy buttons for JavaScript only, the brand's name, the USD value of a coin-priced amount, the
"Return to the store" link only once Paid and only to an http(s) URL, and no countdown once Paying."""

from __future__ import annotations

import html as html_lib
import re
from typing import Any

import pytest

from orbchain.chains.devnet import devnet_chain
from orbchain.core.payments.receive import qr_payload
from orbchain.core.watching.scanner import scan_chain
from orbchain.testing.fixtures import open_shop
from orbchain.core.payments.row_cache import payment_rows
from orbchain.web.keys import GATEWAY
from orbchain.web.live_state import read_state

from .lightning_support import create_payment
from .support import api

COINS = ["BTC", "LTC", "DOGE", "SOL", "TRX", "USDT_TRC20", "ETH", "USDT_ERC20", "BTC_LN"]
# A configured Ethereum chain (its id is what EIP-681 names); the port is closed and nothing is scanned.
EVM = {"evm": {"ethereum": {"rpc_url": "http://127.0.0.1:9", "chain_id": 1}}}


@pytest.fixture
async def shop(make_config, make_client):
    shop = await open_shop(make_config, make_client, scheduler={"enabled": False}, plugin=EVM)
    status, body = await api(shop.client, "PUT", "/dashboard/settings/coins", shop.merchant.jwt,
                             json={"accepted_coins": COINS})
    assert status == 200, body
    return shop


async def invoice(shop: Any, key: str | None = None, **fields: Any) -> dict[str, Any]:
    headers = {"merchant_api_key": key} if key else shop.merchant.merchant_key
    status, body = await api(shop.client, "POST", "/v1/payment/invoice", headers,
                             json={"amount": "0.5", "currency": "BTC", **fields})
    assert status == 200, body
    return body["data"]


async def page(shop: Any, track_id: str) -> str:
    response = await shop.client.get(f"/pay/{track_id}")
    assert response.status == 200
    return await response.text()


def wallet_link(html: str) -> str | None:
    found = re.search(r'href="([^"]*)" id="wallet-link"', html)
    return html_lib.unescape(found.group(1)) if found else None


async def confirm(shop: Any, data: dict[str, Any], confirmations: int | None = None) -> None:
    gateway = shop.client.app[GATEWAY]
    chain = devnet_chain(gateway)
    coin = gateway.coins.require(data["pay_currency"])
    await chain.pay(coin, data["address"], coin.to_units(data["pay_amount"]))
    for _ in range(coin.confirmations + 2 if confirmations is None else confirmations):
        await chain.mine(1)
        await scan_chain(gateway, gateway.chains["devnet"])


async def test_open_in_wallet_is_each_chains_uri(shop):
    gateway = shop.client.app[GATEWAY]
    expected = {
        "BTC": "bitcoin:{a}?amount=0.5", "LTC": "litecoin:{a}?amount=0.5", "DOGE": "dogecoin:{a}?amount=0.5",
        "SOL": "solana:{a}?amount=0.5", "TRX": "tron:{a}?amount=0.5", "ETH": "ethereum:{a}@1?value=500000000000000000",
        "USDT_ERC20": "ethereum:0xdAC17F958D2ee523a2206206994597C13D831ec7@1/transfer?address={a}&uint256=500000",
        # A TRC-20 token names its contract (the form Cake Wallet writes; issue 49, branch brand2).
        "USDT_TRC20": "tron:{a}?amount=0.5&token=TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
    }
    for symbol, uri in expected.items():
        data = await invoice(shop, currency=symbol, accepted_coins=[symbol])
        html = await page(shop, data["track_id"])
        view = (await api(shop.client, "GET", f"/v1/payment/{data['track_id']}", shop.merchant.merchant_key))[1]
        assert wallet_link(html) == uri.format(a=data["address"]), symbol
        assert qr_payload(gateway, view["data"], gateway.coins.require(symbol)) == wallet_link(html)  # QR agrees


async def test_copy_buttons_appear_only_with_javascript(shop):
    data = await invoice(shop)
    html = await page(shop, data["track_id"])
    for target in ("address", "pay-amount"):
        assert re.search(rf'<button type="button" class="copy" data-copy="{target}" aria-label="[^"]+" hidden>', html)
    assert f'id="address">{data["address"]}</code>' in html  # selectable text without JavaScript
    assert '<script nonce="' in html and 'src="/assets/pay.js"' in html  # the static script that shows them


async def test_lightning_amount_shows_its_usd_value(shop):
    data = await create_payment(shop, amount="0.001", kind="invoice")  # 0.001 BTC at the devnet's 60000 USD
    html = await page(shop, data["track_id"])
    assert 'id="fiat-amount">≈ 60.00 USD at the current rate<' in html
    assert 'data-copy="pay-request"' in html and 'id="pay-request-link"' in html
    fiat = await invoice(shop, amount="10", currency="USD", accepted_coins=["BTC"])  # its own fiat: not estimated
    assert 'id="fiat-amount">≈ 10 USD<' in await page(shop, fiat["track_id"])


async def test_brand_name_shown_and_the_default_placeholder_not(shop):
    data = await invoice(shop)
    assert 'id="merchant-name"' not in await page(shop, data["track_id"])  # the account's "Default" brand
    status, body = await api(shop.client, "POST", "/dashboard/brands", shop.merchant.jwt, json={"name": "Café <Lumière>"})
    assert status == 200, body
    status, key = await api(shop.client, "POST", "/dashboard/api-keys", shop.merchant.jwt, json={
        "label": "brand", "scopes": ["payment:create", "payment:read"], "brand_id": body["data"]["id"]})
    assert status == 200, key
    branded = await invoice(shop, key["data"]["api_key"])
    assert '<p class="merchant" id="merchant-name">Café &lt;Lumière&gt;</p>' in await page(shop, branded["track_id"])


async def test_return_link_only_once_paid_and_only_http(shop):
    gateway = shop.client.app[GATEWAY]
    data = await invoice(shop, accepted_coins=["BTC"], return_url="https://shop.example/thanks?o=1&x=2")
    waiting = await page(shop, data["track_id"])
    shown = re.sub(r"data-texts='[^']*'", "", waiting)  # the live script's words for later, not on the page
    assert 'id="return-link"' not in shown and "Return to the store" not in shown
    await confirm(shop, data, confirmations=1)
    paying = await page(shop, data["track_id"])
    assert 'id="return-link"' not in paying
    assert 'id="countdown"' not in paying and "Time left" not in paying  # the clock stops once the payment is seen
    await confirm_more(shop)
    paid = await page(shop, data["track_id"])
    assert '<a class="button" id="return-link" href="https://shop.example/thanks?o=1&amp;x=2"' in paid
    assert (await read_state(gateway, data["track_id"]))["return_url"] == "https://shop.example/thanks?o=1&x=2"
    # A stored value the API would refuse (an older row, a plugin's insert) never becomes a link.
    await gateway.db.execute("UPDATE payments SET return_url = :u WHERE track_id = :t",
                             {"u": "javascript:alert(document.cookie)", "t": data["track_id"]})
    shop.client.app[GATEWAY].services.pop("pay_page_contents", None)
    rows = payment_rows(gateway)  # PostgreSQL: the UPDATE's notification (m0047) may reach the cache after the read
    if rows is not None:
        rows.changed(data["track_id"])
    unsafe = await page(shop, data["track_id"])
    assert 'id="return-link"' not in unsafe and "javascript:" not in unsafe
    assert (await read_state(gateway, data["track_id"]))["return_url"] is None


async def confirm_more(shop: Any) -> None:
    gateway = shop.client.app[GATEWAY]
    for _ in range(gateway.coins.require("BTC").confirmations + 2):
        await devnet_chain(gateway).mine(1)
        await scan_chain(gateway, gateway.chains["devnet"])
