"""The hosted payment page in a real headless Chromium with JavaScript off.

Needs /usr/bin/chromium: run ``scripts/ensure_chromium.sh`` first (``make test``
does). Without it these tests fail with that instruction; they never skip.
Screenshots land in each test's ``tmp_path`` (pay_waiting.png, ...).
"""

from __future__ import annotations

from typing import Any

import pytest

from orbchain.chains.devnet import devnet_chain
from orbchain.core.watching.scanner import scan_chain
from orbchain.web.keys import GATEWAY

from .browser import Browser, assert_png, serve_app
from .browser import require_chromium  # noqa: F401 - autouse fixture

CHECK_AGAIN = "#check-again-link"  # an open page without JavaScript: checked at once by a link (or by the 15 s refresh)


@pytest.fixture
async def served(aiohttp_server, aiohttp_client, make_config):
    """The full app on a real TCP port, its ``base_url`` matching so payment_url opens as is."""
    return await serve_app(aiohttp_server, aiohttp_client, make_config)


async def _merchant_key(client: Any) -> str:
    response = await client.post("/dashboard/auth/signup",
                                 json={"email": "browser@example.com", "password": "correct horse battery"})
    assert response.status == 200, await response.text()
    return (await response.json())["data"]["api_keys"]["merchant_api_key"]


async def _payment(client: Any, key: str, track_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/payment/{track_id}", headers={"merchant_api_key": key})
    return (await response.json())["data"]


async def test_page_scripts_are_really_off(tmp_path):
    async with Browser.launch(tmp_path) as browser:
        await browser.goto("data:text/html,<title>before</title><script>document.title='ran'</script>")
        assert await browser.evaluate("document.title") == "before"


async def test_payer_switches_coin_pays_and_sees_paid_without_javascript(served, tmp_path):
    client = served
    key = await _merchant_key(client)
    response = await client.post("/v1/payment/invoice", headers={"merchant_api_key": key}, json={
        "amount": "10", "currency": "USD", "accepted_coins": ["BTC", "LTC"], "description": "Order #42 <test>",
        "return_url": "https://shop.example/thanks",
    })
    assert response.status == 200, await response.text()
    invoice = (await response.json())["data"]
    url = invoice["payment_url"]
    assert url.startswith(str(client.server.make_url("/")))

    async with Browser.launch(tmp_path) as browser:
        # Waiting: everything server-rendered; the payer checks again by a link (the 15 s <noscript> refresh too).
        await browser.goto(url)
        html = await browser.html()
        assert '<noscript><meta http-equiv="refresh" content="15"></noscript>' in html and "<svg" in html
        assert await browser.evaluate(f"document.querySelector('{CHECK_AGAIN}').getAttribute('href')") \
            == url.removeprefix(str(client.server.make_url("/")).rstrip("/"))
        assert await browser.text("#status") == "Waiting"
        assert await browser.text("#address") == invoice["address"]
        assert await browser.text("#pay-currency") == "BTC"
        assert "Order #42 <test>" in await browser.text("h1")
        assert await browser.evaluate("getComputedStyle(document.querySelector('.card')).borderRadius") is not None
        assert_png(await browser.screenshot(tmp_path / "pay_waiting.png"))

        # The coin picker: a GET form, then a 303 back to the clean URL.
        await browser.select("#pay_currency", "LTC")
        await browser.click(".picker button[type=submit]")
        assert await browser.url() == url
        switched = await _payment(client, key, invoice["track_id"])
        assert switched["pay_currency"] == "LTC" and switched["address"] != invoice["address"]
        assert await browser.text("#pay-currency") == "LTC"
        assert await browser.text("#address") == switched["address"]
        # The BIP-21 URI is the QR's and the "Open in wallet" link's, never printed text.
        ltc = client.app[GATEWAY].coins.require("LTC")
        uri = f"litecoin:{switched['address']}?amount={ltc.format(ltc.to_units(switched['pay_amount']))}"
        assert await browser.evaluate("document.getElementById('wallet-link').getAttribute('href')") == uri
        assert "litecoin:" not in await browser.text(".deposit")
        # Without JavaScript the copy buttons stay hidden; the values are selectable text.
        assert await browser.evaluate("[...document.querySelectorAll('button.copy')].every(b => b.hidden)")
        assert_png(await browser.screenshot(tmp_path / "pay_switched.png"))

        # The development pay form: the payer pays from the page.
        await browser.click(".devnet button[type=submit]")
        assert await browser.url() == url
        gateway = client.app[GATEWAY]
        chain, adapter = devnet_chain(gateway), gateway.chains["devnet"]
        status = None
        for _ in range(60):
            await chain.mine(1)
            await scan_chain(gateway, adapter)
            status = (await _payment(client, key, invoice["track_id"]))["status"]
            if status == "Paid":
                break
        assert status == "Paid"

        await browser.click(CHECK_AGAIN)
        assert await browser.url() == url
        assert await browser.evaluate(f"document.querySelector('{CHECK_AGAIN}')") is None
        assert await browser.text("#status") == "Paid"
        assert await browser.evaluate("document.querySelector('#paid-message') !== null")
        assert await browser.evaluate(
            "[...document.querySelectorAll('a')].some(a => a.href === 'https://shop.example/thanks'"
            " && a.textContent.includes('Return to the store'))")
        assert await browser.evaluate("document.querySelector('#address')") is None
        assert_png(await browser.screenshot(tmp_path / "pay_paid.png"))


async def test_unknown_payment_is_an_html_page(served, tmp_path):
    async with Browser.launch(tmp_path) as browser:
        await browser.goto(str(served.server.make_url("/pay/noSuchPayment")))
        assert await browser.text("h1") == "Payment not found"
        assert_png(await browser.screenshot(tmp_path / "pay_not_found.png"))
