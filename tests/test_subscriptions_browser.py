"""The customer's subscription pages in a real headless Chromium with JavaScript off.

Needs /usr/bin/chromium: run ``scripts/ensure_chromium.sh`` first (``make test``
does). Without it these tests fail with that instruction; they never skip.
A customer enrols from the plan's page, lands on the first invoice's hosted
page, pays it, returns to the manage page (ACTIVE), pauses, resumes and
cancels, and the old link stops working. Screenshots land in the test's ``tmp_path``.
"""

from __future__ import annotations


import pytest

from orbchain.plugins.subscriptions.billing import run_billing
from orbchain.web.keys import GATEWAY

from .browser import Browser, assert_png, serve_app
from .support import Devnet
from .browser import require_chromium  # noqa: F401 - autouse fixture



@pytest.fixture
async def served(aiohttp_server, aiohttp_client, make_config):
    """The full app on a real TCP port whose ``base_url`` matches, so absolute links open as they are."""
    return await serve_app(aiohttp_server, aiohttp_client, make_config)


async def test_customer_enrols_pays_link_pauses_resumes_and_cancels(served, tmp_path):
    client = served
    response = await client.post("/dashboard/auth/signup",
                                 json={"email": "subs@example.com", "password": "correct horse battery"})
    assert response.status == 200, await response.text()
    signup = (await response.json())["data"]
    jwt = {"Authorization": f"Bearer {signup['token']}"}
    key = {"merchant_api_key": signup["api_keys"]["merchant_api_key"]}
    response = await client.post("/dashboard/plans", headers=jwt, json={
        "label": "Newsletter", "amount_usd": "5", "interval_sec": 30 * 86400, "accepted_coins": ["BTC"]})
    assert response.status == 200, await response.text()
    plan = (await response.json())["data"]

    async with Browser.launch(tmp_path) as browser:
        await browser.goto(plan["subscribe_url"])
        assert await browser.text("#plan-label") == "Newsletter"
        assert await browser.text("#amount-usd") == "5.00"
        assert_png(await browser.screenshot(tmp_path / "subscribe.png"))

        # The server refuses what the form's own limits did not stop: the form comes back with the error.
        await browser.fill("#email", "reader@example.com")
        # Typing stops at the field's maxlength (128); a tampered form (or an old browser) sends more.
        await browser.evaluate("document.querySelector('#customer_ref').value = 'r'.repeat(129)")
        await browser.click("#subscribe")
        assert "Your customer reference" in (await browser.text("#form-error") or "")  # the field by its label
        assert await browser.evaluate("document.querySelector('#email').value") == "reader@example.com"
        await browser.fill("#customer_ref", "reader-1")
        await browser.click("#subscribe")
        # Straight to the first period's invoice (issue 29, issue 32): the enrolment waits for it, PENDING, and
        # is not a subscription of the API until it is paid (issue 42 item 9).
        pay_url = await browser.url()
        assert "/pay/" in pay_url and await browser.text("#status") == "Waiting"
        listed = (await (await client.get("/v1/subscription", headers=key)).json())["data"]["subscriptions"]
        assert listed == []
        row = await client.app[GATEWAY].db.fetch_one("SELECT magic_token, status, customer_ref FROM subscriptions")
        assert (row["status"], row["customer_ref"]) == ("PENDING", "reader-1")
        manage_url = f"{client.app[GATEWAY].config.base_url}/subscribe/manage/{row['magic_token']}"
        payment = (await (await client.get(f"/v1/payment/{pay_url.rsplit('/', 1)[1]}", headers=key)).json())["data"]
        devnet = Devnet(client)
        await devnet.pay("BTC", payment["address"], payment["pay_amount"])
        await devnet.mine(2)
        await browser.reload()
        assert await browser.text("#status") == "Paid"
        back = await browser.evaluate(
            "[...document.querySelectorAll('a')].find(a => a.textContent.includes('Return to the store')).href")
        assert back == manage_url  # the invoice's return link is the manage page
        await browser.goto(manage_url)
        assert await browser.text("#status") == "Active"
        assert await browser.evaluate("document.querySelectorAll('#history li').length") == 1
        assert (await run_billing(client.app[GATEWAY])).minted == 0  # the next period is a month away

        await browser.click("#pause")
        assert await browser.url() == manage_url and await browser.text("#status") == "Paused"
        await browser.click("#resume")
        assert await browser.text("#status") == "Active"
        assert_png(await browser.screenshot(tmp_path / "manage_active.png"))
        await browser.click("#cancel")
        fresh_url = await browser.url()
        assert fresh_url != manage_url and await browser.text("#status") == "Cancelled"
        assert await browser.evaluate("document.querySelector('#pause')") is None
        assert_png(await browser.screenshot(tmp_path / "manage_cancelled.png"))

        await browser.goto(manage_url)  # the rotated link
        assert await browser.text("h1") == "Link not valid"
