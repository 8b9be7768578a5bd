"""The merchant dashboard in a real headless Chromium on devnet, with JavaScript off and on.

Needs /usr/bin/chromium: run ``scripts/ensure_chromium.sh`` first (``make test``
does). Without it these tests fail with that instruction; they never skip.
A merchant signs up, sets a webhook, creates an invoice, the payer pays it on
the devnet, the merchant sees it Paid, pays out, creates and rotates a key
and reads the webhook log. Screenshots land in the test's ``tmp_path``.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from orbchain.api import AccountSession, revoke_dashboard_tokens
from orbchain.core.events.webhooks import deliver_due
from orbchain.plugins.oidc import payload as oidc_payload
from orbchain.web.keys import GATEWAY

from .browser import Browser, BrowserError, assert_png, serve_app
from .browser import require_chromium  # noqa: F401 - autouse fixture
from .support import Devnet, WebhookReceiver
from .test_live_pages_browser import POLLS, shows

BTC_DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"


@pytest.fixture
async def served(aiohttp_server, aiohttp_client, make_config):
    return await serve_app(aiohttp_server, aiohttp_client, make_config)


async def streaming(gateway) -> None:
    """Until the page's event stream is open (the hub counts it)."""
    for _ in range(POLLS):
        hub = gateway.services.get("live_hub")
        if hub is not None and hub.open_streams:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the payment detail never opened its event stream")


async def until_receipt(browser: Browser) -> None:
    """Until the page reloaded itself once Paid (the receipt is rendered by the server)."""
    for _ in range(POLLS):
        try:
            if await browser.evaluate("!!document.getElementById('receipt-signature')"):
                return
        except BrowserError:
            pass  # evaluated while the page reloads
        await asyncio.sleep(0.1)
    raise AssertionError("the paid payment's detail never showed its receipt")


@pytest.fixture
async def receiver():
    hook = WebhookReceiver()
    yield hook
    await hook.close()


@pytest.mark.parametrize("javascript", [False, True], ids=["js-off", "js-on"])
async def test_merchant_signs_up_gets_paid_pays_out_rotates_a_key_and_reads_webhooks(served, receiver, tmp_path,
                                                                                     javascript):
    client = served
    gateway = client.app[GATEWAY]
    base = str(client.server.make_url("/")).rstrip("/")
    hook_url = await receiver.start()
    shots = tmp_path / ("js-on" if javascript else "js-off")
    shots.mkdir()

    async with Browser.launch(tmp_path, javascript=javascript) as browser:
        # Sign up: the keys are shown once, the session cookie is set.
        await browser.goto(f"{base}/app")
        assert (await browser.url()).startswith(f"{base}/app/login")
        await browser.click("a[href='/app/signup']")
        await browser.fill("#email", "browser@example.com")
        await browser.fill("#password", "correct horse battery")
        assert_png(await browser.screenshot(shots / "signup.png"))
        await browser.click("#create-account")
        assert (await browser.text("#merchant_api_key") or "").strip()
        copy_buttons = await browser.evaluate("document.querySelectorAll('button.copy').length")
        assert copy_buttons == (3 if javascript else 0)  # the script only enhances
        assert_png(await browser.screenshot(shots / "keys.png"))
        await browser.click("#continue")
        assert await browser.url() == f"{base}/app"

        # A webhook URL, so the payment's webhook reaches the log.
        await browser.goto(f"{base}/app/settings")
        await browser.fill("#webhook_url", hook_url)
        await browser.click("#save-webhook")
        assert "webhook_secret" in await browser.html()

        # An invoice, paid on the devnet, seen Paid.
        await browser.goto(f"{base}/app/payments/new")
        await browser.click("#more-options > summary", navigates=False)  # type, order id: under "More options"
        await browser.check("#type-invoice")
        await browser.fill("#amount", "0.01")
        await browser.select("#currency", "BTC")
        await browser.fill("#order_id", "order-7")
        await browser.click("#create-payment")
        assert await browser.text("#notice") == "Payment created."
        assert await browser.text("#status") == "Waiting"
        payment_url = (await browser.url()).split("?")[0]
        address = (await browser.text("#address") or "").strip()
        assert_png(await browser.screenshot(shots / "invoice_waiting.png"))
        devnet = Devnet(client)
        if javascript:  # the detail follows the hosted page's stream: Paying in place, then one reload when Paid
            await browser.evaluate("window.__kept = 'no reload'")
            await streaming(gateway)
            await devnet.pay("BTC", address, "0.01")
            await shows(browser, "#status", "Paying")
            assert await browser.evaluate("window.__kept") == "no reload"
            assert await browser.text("#deposit-rows td:nth-child(4)") == "0"  # confirmations, in place
            assert await browser.evaluate("document.querySelector('#deposit-rows td:nth-child(4)').dataset.label") \
                == "Confirmations"  # labelled as the server labels it: a card on a phone
            assert await browser.evaluate("document.querySelector('#cancel-form').hidden") is True
            assert not browser.console_errors()  # no CSP refusal, no script error
            await devnet.mine(6)
            await until_receipt(browser)
        else:
            await devnet.pay("BTC", address, "0.01")
            await devnet.mine(6)
            await browser.goto(payment_url)
        assert await browser.text("#status") == "Paid"
        assert "signature" in (await browser.text("#receipt") or "") or await browser.text("#receipt-signature")
        assert_png(await browser.screenshot(shots / "invoice_paid.png"))
        await browser.goto(f"{base}/app/payments?status=PAID")
        assert await browser.evaluate("document.querySelectorAll('#payments-table tbody a').length") == 1

        # Pay out part of the balance: reviewed first, then confirmed.
        await browser.goto(f"{base}/app/payouts")
        await browser.select("#payout-currency", "BTC")
        await browser.fill("#payout-address", BTC_DEST)
        await browser.fill("#payout-amount", "0.002")
        await browser.click("#send-payout")
        assert await browser.text("#review-debit") == "0.002 BTC"
        assert_png(await browser.screenshot(shots / "payout_review.png"))
        await browser.click("#confirm-payout")
        assert await browser.text("#notice") == "Payout created."
        assert await browser.text("#payouts-table .payout-status") == "Sending"
        assert_png(await browser.screenshot(shots / "payouts.png"))

        # A scoped key, then rotated: the new secret is shown once.
        await browser.goto(f"{base}/app/keys")
        await browser.fill("#label", "shop backend")
        await browser.check("#scope-payment-read")
        await browser.click("#create-key")
        first = (await browser.text("#new-api-key") or "").strip()
        key_id = await browser.evaluate("document.querySelector('#keys-table tbody tr:last-child').id.slice(4)")
        await browser.click(f"#rotate-{key_id}")
        second = (await browser.text("#rotated-api-key") or "").strip()
        assert first and second and first != second
        assert_png(await browser.screenshot(shots / "keys_rotated.png"))

        # The webhook log shows the payment's webhook.
        await deliver_due(gateway)
        await browser.goto(f"{base}/app/webhooks")
        assert "payment.paid" in (await browser.text("#webhook-logs") or "")
        assert_png(await browser.screenshot(shots / "webhooks.png"))
        assert [b["track_id"] for b in receiver.of_type("payment.paid")] == [payment_url.rsplit("/", 1)[1]]

        await browser.click("#logout")
        assert (await browser.url()).startswith(f"{base}/app/login")
        assert await browser.text("#notice") == "You are signed out."


async def test_a_foreign_sign_in_fragment_signs_nobody_in(served, tmp_path):
    """``/app#google-auth=<payload>`` with a payload this browser did not start (here made from another
    browser's sign-up token, as an attacker would send their own): with JavaScript the page posts it, without
    the visitor pastes the address; either way nobody is signed in and the page says why (issue 29: before,
    the script signed the browser in to the payload's account). The legitimate journey, through a real
    identity provider, is tests/test_oidc.py's headless test."""
    client = served
    base = str(client.server.make_url("/")).rstrip("/")
    response = await client.post("/dashboard/auth/signup", json={"email": "idp@example.com",
                                                                 "password": "correct horse battery"})
    data = (await response.json())["data"]
    token = oidc_payload.encode(AccountSession(data["merchant_id"], "idp@example.com", data["token"], None), False,
                                "L" * 43)
    async with Browser.launch(tmp_path / "on", javascript=True) as browser:
        await browser.goto(f"{base}/app#google-auth={token}")
        for _ in range(100):  # the script posts the fragment: one more navigation
            if await browser.text("#form-error"):
                break
            await asyncio.sleep(0.1)
        assert "not enabled" in (await browser.text("#form-error") or "")  # no identity provider here
        assert "#" not in await browser.url()  # the script took the payload out of the address
        await browser.goto(f"{base}/app")
        assert await browser.text("#who") is None
        assert browser.page_errors == []
    async with Browser.launch(tmp_path / "off") as browser:
        await browser.goto(f"{base}/app#google-auth={token}")
        assert "/app/login" in await browser.url()
        address = await browser.url()  # the visitor pastes the address bar (read here from DevTools)
        assert "#google-auth=" in address
        await browser.evaluate(f"document.querySelector('#fragment-value').value = {json.dumps(address)}")
        await browser.click("#fragment-fallback button[type=submit]")
        assert "not enabled" in (await browser.text("#form-error") or "")
        await browser.goto(f"{base}/app")
        assert await browser.text("#who") is None


async def test_a_white_label_payment_detail_is_live_and_ends_with_the_session(aiohttp_server, aiohttp_client,
                                                                                make_config, tmp_path):
    """JavaScript on: the detail of a white-label payment (no public page) flips to Paying in place over its
    dashboard stream, tells the embed, and goes to the sign-in page once the session is revoked elsewhere."""
    client = await serve_app(aiohttp_server, aiohttp_client, make_config, live={"heartbeat_seconds": 1})
    gateway = client.app[GATEWAY]
    base = str(client.server.make_url("/")).rstrip("/")
    async with Browser.launch(tmp_path, javascript=True) as browser:
        await browser.goto(f"{base}/app/signup")
        await browser.fill("#email", "white-live@example.com")
        await browser.fill("#password", "correct horse battery")
        await browser.click("#create-account")
        await browser.click("#continue")
        await browser.goto(f"{base}/app/payments/new")
        await browser.click("#more-options > summary", navigates=False)  # type, order id: under "More options"
        await browser.check("#type-white_label")
        await browser.fill("#amount", "0.01")
        await browser.select("#currency", "BTC")
        await browser.click("#create-payment")
        assert await browser.text("#status") == "Waiting"
        track_id = (await browser.url()).split("?")[0].rsplit("/", 1)[1]
        address = (await browser.text("#address") or "").strip()
        await browser.evaluate("window.__kept = 'no reload'; window.__seen = [];"
                               " document.addEventListener('orbchain:payment', e => window.__seen.push(e.detail))")
        await streaming(gateway)
        await Devnet(client).pay("BTC", address, "0.01")
        await shows(browser, "#status", "Paying")
        assert await browser.evaluate("window.__kept") == "no reload"
        assert await browser.text("#deposit-rows td:nth-child(2)") == "0.01 BTC"
        seen = await browser.evaluate("window.__seen.map(s => s.track_id + ' ' + s.type + ' ' + s.status)")
        assert seen[-1] == f"{track_id} white_label Paying"
        assert not browser.console_errors()
        assert_png(await browser.screenshot(tmp_path / "white_label_paying.png"))

        merchant_id = (await gateway.db.fetch_one("SELECT merchant_id FROM payments WHERE track_id = :t",
                                                  {"t": track_id}))["merchant_id"]
        await revoke_dashboard_tokens(gateway, merchant_id)  # "sign out everywhere", from another device
        for _ in range(POLLS):
            if (await browser.url()).startswith(f"{base}/app/login"):
                break
            await asyncio.sleep(0.1)
        assert (await browser.url()).startswith(f"{base}/app/login")
        assert gateway.services["live_hub"].open_streams == 0
