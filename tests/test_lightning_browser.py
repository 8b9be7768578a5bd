"""The hosted page of a BTC_LN payment in a real headless Chromium with JavaScript off (devnet Lightning node).

Needs /usr/bin/chromium (``scripts/ensure_chromium.sh``); without it these
tests fail with that instruction, never skip. Screenshots land in the
test's ``tmp_path``.
"""

from __future__ import annotations

from typing import Any

import bolt11

from orbchain.chains.lightning import settlement
from orbchain.chains.lightning.receive import lightning_chain
from orbchain.web.keys import GATEWAY

from .browser import Browser, assert_png
from .browser import require_chromium  # noqa: F401 - autouse fixture
from .test_pay_page_browser import CHECK_AGAIN, _payment, served  # noqa: F401 - the served fixture



async def _lightning_merchant(client: Any) -> str:
    response = await client.post("/dashboard/auth/signup",
                                 json={"email": "ln-browser@example.com", "password": "correct horse battery"})
    assert response.status == 200, await response.text()
    data = (await response.json())["data"]
    response = await client.put("/dashboard/settings/coins", json={"accepted_coins": ["BTC_LN"]},
                                headers={"Authorization": f"Bearer {data['token']}"})
    assert response.status == 200, await response.text()
    return data["api_keys"]["merchant_api_key"]


async def _invoice(client: Any, key: str) -> dict[str, Any]:
    response = await client.post("/v1/payment/invoice", headers={"merchant_api_key": key},
                                 json={"amount": "0.00021", "currency": "BTC_LN", "description": "Coffee"})
    assert response.status == 200, await response.text()
    return (await response.json())["data"]


async def test_lightning_page_shows_the_invoice_and_turns_paid_when_checked_again(served, tmp_path):  # noqa: F811
    client = served
    key = await _lightning_merchant(client)
    payment = await _invoice(client, key)
    invoice = payment["lightning"]["bolt11"]
    async with Browser.launch(tmp_path) as browser:
        await browser.goto(payment["payment_url"])
        html = await browser.html()
        assert '<noscript><meta http-equiv="refresh" content="15"></noscript>' in html and "<svg" in html
        assert await browser.text("#status") == "Waiting"
        assert await browser.text("#pay-currency") == "BTC" and await browser.text("#network") == "Lightning"
        shown = await browser.text("#pay-request")
        assert shown == "lightning:" + invoice.upper()
        assert bolt11.decode(shown.removeprefix("lightning:").lower()).amount_msat == 21_000_000
        assert await browser.evaluate("document.querySelector('#pay-request-link').href") == shown
        assert await browser.evaluate("document.querySelector('#address')") is None
        # The long invoice's QR fits a phone's width whole (scaled, not cut off).
        assert await browser.evaluate(
            "(() => { const svg = document.querySelector('.qr svg'), q = svg.getBoundingClientRect();"
            " const code = svg.querySelector('path').getBoundingClientRect();"
            " return q.left >= 0 && q.right <= window.innerWidth && code.right <= q.right + 1"
            " && code.bottom <= q.bottom + 1; })()")
        assert_png(await browser.screenshot(tmp_path / "ln_waiting.png"))

        # A wallet elsewhere pays; the node reports it; the payer (no script) checks again and sees Paid.
        gateway = client.app[GATEWAY]
        node = lightning_chain(gateway).backend
        await node.settle(invoice)
        assert await settlement.poll_open_invoices(gateway, node) == 1
        await browser.click(CHECK_AGAIN)
        assert await browser.text("#status") == "Paid"
        assert await browser.evaluate("document.querySelector('#paid-message') !== null")
        assert await browser.evaluate("document.querySelector('#pay-request')") is None
        assert await browser.evaluate(f"document.querySelector('{CHECK_AGAIN}')") is None
        assert_png(await browser.screenshot(tmp_path / "ln_paid.png"))


async def test_the_devnet_lightning_button_pays_from_the_page(served, tmp_path):  # noqa: F811
    client = served
    key = await _lightning_merchant(client)
    payment = await _invoice(client, key)
    async with Browser.launch(tmp_path) as browser:
        await browser.goto(payment["payment_url"])
        assert await browser.text(".devnet button[type=submit]") == "Pay with devnet Lightning"
        await browser.click(".devnet button[type=submit]")
        assert await browser.url() == payment["payment_url"]
        assert await browser.text("#status") == "Paid"
        assert (await _payment(client, key, payment["track_id"]))["status"] == "Paid"
        assert await browser.evaluate("document.querySelector('.devnet')") is None
        assert_png(await browser.screenshot(tmp_path / "ln_paid_by_button.png"))
