"""The tip page and a buyer-entered link's prompt in headless Chromium with JavaScript off.

A payer picks a coin and types an amount as a person would (DevTools sets
the field's value; clicks are real mouse events) and lands on the new
invoice's hosted page. Needs /usr/bin/chromium; never skipped.
"""

from __future__ import annotations


import pytest


from .browser import Browser, serve_app
from .browser import require_chromium  # noqa: F401 - autouse fixture
from .support import api, signup


@pytest.fixture
async def served(aiohttp_server, aiohttp_client, make_config):
    return await serve_app(aiohttp_server, aiohttp_client, make_config)


async def _payment(client, merchant, url: str) -> dict:
    track_id = url.rsplit("/pay/", 1)[1]
    status, body = await api(client, "GET", f"/v1/payment/{track_id}", merchant.merchant_key)
    assert status == 200, body
    return body["data"]


async def test_tip_without_javascript(served, tmp_path):
    client = served
    merchant = await signup(client)
    _, body = await api(client, "GET", "/dashboard/account", merchant.jwt)
    account = body["data"]["account"]["account_id"]
    base = str(client.server.make_url("")).rstrip("/")
    async with Browser.launch(tmp_path) as browser:
        await browser.goto(f"{base}/tip/{account}?coin=DOGE")  # not accepted: the first coin stays chosen
        assert await browser.evaluate("document.querySelector('#coin').value") == "BTC"
        await browser.goto(f"{base}/tip/{account}?coin=ltc")
        assert await browser.evaluate("document.querySelector('#coin').value") == "LTC"
        assert await browser.text("#account-id") == account
        await browser.screenshot(tmp_path / "tip.png")

        await browser.fill("#amount", "1,5")  # the one strict parser: a comma is refused, saying why
        await browser.click("#tip-form button[type=submit]")
        assert "as the decimal separator" in await browser.text("#tip-error")
        assert await browser.evaluate("document.querySelector('#coin').value") == "LTC"

        await browser.select("#coin", "BTC")
        await browser.fill("#amount", "0.002")
        await browser.click("#tip-form button[type=submit]")
        url = await browser.url()
        assert url.startswith(f"{base}/pay/")
        invoice = await _payment(client, merchant, url)
        assert invoice["pay_currency"] == "BTC" and invoice["pay_amount"] == "0.002"
        assert await browser.text("#pay-amount") == "0.002" and await browser.text("#address") == invoice["address"]


async def test_link_prompt_without_javascript(served, tmp_path):
    client = served
    merchant = await signup(client)
    status, body = await api(client, "POST", "/dashboard/payment-links", merchant.jwt,
                             json={"coin": "LTC", "description": "Support the shop"})
    assert status == 200, body
    link = body["data"]
    async with Browser.launch(tmp_path) as browser:
        await browser.goto(link["url"])  # base_url is this server
        assert await browser.text("h1") == "Support the shop"
        await browser.fill("#amount", "0.000000001")
        await browser.click("#amount-form button[type=submit]")
        assert await browser.text("#amount-error")
        await browser.fill("#amount", "1.5")
        await browser.click("#amount-form button[type=submit]")
        url = await browser.url()
        invoice = await _payment(client, merchant, url)
        assert invoice["pay_currency"] == "LTC" and invoice["pay_amount"] == "1.5"
        assert invoice["description"] == "Support the shop" and await browser.text("#pay-currency") == "LTC"
    _, body = await api(client, "GET", "/dashboard/payment-links", merchant.jwt)
    assert body["data"]["links"][0]["uses"] == 1
