"""The payment detail page in headless Chromium, scripts off, on a phone (390x844) and a desktop (issue 49 item 7).

A paid payment whose webhooks were never sent (no URL yet): the page is axe
clean at both sizes with its timeline, "Send again" forms and folded
receipt; nothing is wider than the screen; every card label fits its column
whole (the phone used to show "Confirmatio/ns"); the explorer link is there;
"Send again" works as a plain form. Screenshots land in the test's tmp_path.
"""

from __future__ import annotations

import json

from orbchain.web.keys import GATEWAY

from .browser import Browser, assert_png, serve_app
from .browser import require_chromium  # noqa: F401 - autouse fixture
from .support import Devnet, api, signup
from .test_accessibility_browser import DESKTOP, VIEWPORTS, axe_source, scripts_off, violations  # noqa: F401

EMAIL, PASSWORD = "detail-phone@example.com", "correct horse battery"
# Each visible card label (a cell's ::before on a phone): its text, its widest word's width in its own font,
# and the width of the label's column.
LABEL_FIT = r"""[...document.querySelectorAll('td[data-label]')].filter(td => td.getClientRects().length)
  .map(td => { const s = getComputedStyle(td, '::before');
    if (s.content === 'none' || s.position !== 'absolute') return null;
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
    const words = td.dataset.label.split(/\s+/);
    return {label: td.dataset.label, word: Math.max(...words.map(w => ctx.measureText(w).width)),
            column: parseFloat(s.width)}; }).filter(Boolean)"""
OVERFLOW = "document.documentElement.scrollWidth - innerWidth"


async def deliveries(client) -> int:
    return int(await client.app[GATEWAY].db.fetch_val("SELECT COUNT(*) FROM webhook_deliveries"))


async def test_the_detail_is_axe_clean_fits_a_phone_and_sends_again(aiohttp_server, aiohttp_client, make_config,
                                                                    tmp_path, axe_source):  # noqa: F811
    client = await serve_app(aiohttp_server, aiohttp_client, make_config,
                             plugin={"dashboard": {"explorer_urls": {"BTC": "https://explorer.example/tx/{txid}"}}})
    merchant = await signup(client, email=EMAIL, password=PASSWORD)
    status, body = await api(client, "POST", "/v1/payment/invoice", merchant.merchant_key,
                             json={"amount": "0.01", "currency": "BTC", "order_id": "order-7"})
    assert status == 200, body
    track_id = body["data"]["track_id"]
    devnet = Devnet(client)
    await devnet.pay("BTC", body["data"]["address"], "0.01")
    await devnet.mine(6)
    base = str(client.server.make_url("/")).rstrip("/")
    found: dict[str, object] = {}
    async with Browser.launch(tmp_path, javascript=True) as browser:
        await scripts_off(browser, True)
        await browser.goto(f"{base}/app/login")
        await browser.fill("#email", EMAIL)
        await browser.fill("#password", PASSWORD)
        await browser.click("#sign-in")
        await browser.goto(f"{base}/app/payments/{track_id}")
        assert await browser.text("#net") == "0.0099 BTC"
        assert await browser.evaluate("document.querySelector('#deposits a.tx-link').href.startsWith("
                                      "'https://explorer.example/tx/')")
        assert await browser.evaluate("document.querySelectorAll('form.send-again').length") >= 2
        assert not await browser.evaluate("document.getElementById('receipt-raw').open")  # folded by default
        for size, metrics in VIEWPORTS.items():
            await browser.page.set_viewport_size(metrics)
            problems = await violations(browser, axe_source)
            if problems:
                found[f"axe {size}"] = problems
            if await browser.evaluate(OVERFLOW) > 0:
                found[f"overflow {size}"] = await browser.evaluate(OVERFLOW)
            assert_png(await browser.screenshot(tmp_path / f"payment-detail-{size}.png"))
        await browser.page.set_viewport_size(VIEWPORTS["phone"])
        labels = await browser.evaluate(LABEL_FIT)
        assert {item["label"] for item in labels} >= {"Transaction", "Amount", "Status", "Confirmations"}, labels
        broken = [item for item in labels if item["word"] > item["column"]]
        assert not broken, broken  # a label wider than its column breaks mid-word ("Confirmatio/ns")

        # "Send again" is a plain form: the page comes back saying it was queued (no URL yet: it is skipped again).
        before = await deliveries(client)
        await browser.click("form.send-again button")
        assert "notice=redelivery-queued" in await browser.url()
        assert "queued for delivery again" in await browser.html()
    assert await deliveries(client) == before + 1  # one more attempt recorded: the one "Send again" made
    assert not found, json.dumps(found, indent=1)
