"""The mini-app page in headless Chromium: Telegram's launch parameters in the fragment, our own script only.

The page is opened the way Telegram's web view opens it, with the signed
init data in ``#tgWebAppData=...`` (signed by ``tests/telegram_support.py``
from the published algorithm). With JavaScript on it signs in and shows the
account, balances and a receive address with its QR code, and refuses a
payout without 2FA; with the holder's 2FA on it asks their code before it
signs in; nothing trips the Content-Security-Policy. With
JavaScript off it says what it needs. Needs /usr/bin/chromium; never skipped.
"""

from __future__ import annotations

import asyncio
import json
from urllib.parse import quote

import pyotp
import pytest

from orbchain.web.keys import GATEWAY

from .browser import Browser, serve_app
from .browser import require_chromium  # noqa: F401 - autouse fixture
from .support import advance_clock, api, signup
from .telegram_support import BOT_TOKEN, MERCHANT_PASSWORD, init_data_for, start_chat

CHAT = 5550002


@pytest.fixture
async def served(aiohttp_server, aiohttp_client, make_config, standin):
    return await serve_app(aiohttp_server, aiohttp_client, make_config,
                           plugin={"telegram": {"bot_token": BOT_TOKEN, "api_base_url": standin.url}})


async def wait_for(browser: Browser, expression: str, timeout: float = 10.0):
    """Poll a page expression until it is truthy (bounded)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await browser.evaluate(expression)
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not within {timeout} s: {expression}")
        await asyncio.sleep(0.1)


async def linked_merchant(client, standin):
    merchant = await signup(client, password=MERCHANT_PASSWORD)
    gateway = client.app[GATEWAY]
    token = await start_chat(gateway, standin, CHAT)
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", merchant.jwt,
                             json={"token": token, "password": MERCHANT_PASSWORD})
    assert status == 200, body
    return merchant, body["data"]["account_id"]


async def test_mini_app_signs_in_from_the_launch_fragment(served, standin, tmp_path):
    client = served
    merchant, account_id = await linked_merchant(client, standin)
    gateway = client.app[GATEWAY]
    base = str(client.server.make_url("")).rstrip("/")
    fragment = f"tgWebAppData={quote(init_data_for(CHAT, gateway.now()), safe='')}&tgWebAppVersion=7.10"
    async with Browser.launch(tmp_path, javascript=True) as browser:
        await browser.goto(f"{base}/tgapp#{fragment}")
        assert await wait_for(browser, "document.querySelector('#tg-account').textContent") == account_id
        assert await browser.evaluate("document.querySelector('#tg-app').hidden") is False
        await wait_for(browser, "document.querySelectorAll('#tg-balances li').length > 0")
        assert "Nothing yet" in await browser.text("#tg-balances")
        assert "2FA is off" in await wait_for(browser, "document.querySelector('#tg-mfa-state').textContent")

        await browser.select("#tg-receive-coin", "BTC")
        await browser.click("#tg-receive-form button[type=submit]", navigates=False)
        address = await wait_for(browser, "document.querySelector('#tg-receive-address').textContent")
        status, body = await api(client, "GET", "/dashboard/receive-address?coin=BTC", merchant.jwt)
        assert address == body["data"]["address"]
        assert await wait_for(browser, "document.querySelector('#tg-receive-qr').complete && "
                                       "document.querySelector('#tg-receive-qr').naturalWidth > 0")

        for selector, text in (("#tg-payout-destination", "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"),
                               ("#tg-payout-amount", "0.001"), ("#tg-payout-code", "123456")):
            assert await browser.evaluate(f"(e => (e.value = {json.dumps(text)}, true))"
                                          f"(document.querySelector({json.dumps(selector)}))")
        await browser.click("#tg-payout-form button[type=submit]", navigates=False)
        result = await wait_for(browser, "(e => !e.hidden && e.textContent)(document.querySelector('#tg-payout-result'))")
        assert "totp_setup_required" in result

        # A reload keeps the session (the init data opens one session only; the token is reused).
        await browser.reload()
        assert await wait_for(browser, "document.querySelector('#tg-account').textContent") == account_id
        await browser.screenshot(tmp_path / "tgapp.png")
        assert browser.csp_refusals() == []


async def test_mini_app_asks_the_holders_code_before_it_signs_in(served, standin, tmp_path):
    """Issue 42: with the holder's 2FA on, the session needs their code; the page asks for it and sends the same
    init data again (on main the init data alone opened the session)."""
    client = served
    merchant, account_id = await linked_merchant(client, standin)
    gateway = client.app[GATEWAY]
    secret = (await api(client, "POST", "/dashboard/mfa/setup", merchant.jwt))[1]["data"]["secret"]
    totp = pyotp.TOTP(secret)
    status, body = await api(client, "POST", "/dashboard/mfa/verify", merchant.jwt,
                             json={"code": totp.at(gateway.now())})
    assert status == 200, body
    advance_clock(gateway, 30)
    base = str(client.server.make_url("")).rstrip("/")
    fragment = f"tgWebAppData={quote(init_data_for(CHAT, gateway.now()), safe='')}&tgWebAppVersion=7.10"
    form_shown = "!document.querySelector('#tg-signin-form').hidden"
    async with Browser.launch(tmp_path, javascript=True) as browser:
        await browser.goto(f"{base}/tgapp#{fragment}")
        await wait_for(browser, form_shown)
        assert "two-factor authentication is on" in await browser.text("#tg-status")
        assert await browser.evaluate("document.querySelector('#tg-app').hidden") is True
        wrong = "000000" if totp.at(gateway.now()) != "000000" else "111111"
        await browser.fill("#tg-signin-code", wrong)
        await browser.click("#tg-signin-submit", navigates=False)
        await wait_for(browser, f"{form_shown} && document.querySelector('#tg-status').textContent"
                                ".includes('invalid TOTP code')")
        await browser.fill("#tg-signin-code", totp.at(gateway.now()))
        await browser.click("#tg-signin-submit", navigates=False)
        assert await wait_for(browser, "document.querySelector('#tg-account').textContent") == account_id
        assert await browser.evaluate("document.querySelector('#tg-signin-form').hidden") is True
        assert "2FA is on" in await wait_for(browser, "document.querySelector('#tg-mfa-state').textContent")
        assert browser.csp_refusals() == []


async def test_mini_app_outside_telegram_and_without_javascript(served, tmp_path):
    client = served
    base = str(client.server.make_url("")).rstrip("/")
    async with Browser.launch(tmp_path, javascript=True) as browser:
        await browser.goto(f"{base}/tgapp")
        await wait_for(browser, "document.querySelector('#tg-status').className.includes('notice-error')")
        assert "from the Orbchain bot" in await browser.text("#tg-status")
        assert await browser.evaluate("document.querySelector('#tg-app').hidden") is True
    async with Browser.launch(tmp_path / "noscript") as browser:
        await browser.goto(f"{base}/tgapp")
        assert "needs JavaScript" in await browser.evaluate("document.querySelector('noscript').textContent")
        assert await browser.evaluate("document.querySelector('#tg-app').hidden") is True


async def test_the_dashboard_confirms_a_link_in_chromium(served, standin, tmp_path):
    """/tg/link/start -> /app#tg-link=... -> the dashboard's script posts it -> a confirmation page naming the
    chat (nothing linked yet) -> the password -> the chat is bound. Against the old code the script's post
    linked the chat at once and showed "linked": the wait for the confirmation page times out."""
    client = served
    gateway = client.app[GATEWAY]
    await signup(client, email="tg-browser@example.com", password="correct horse battery")
    token = await start_chat(gateway, standin, CHAT, first_name="Ada", last_name="Lovelace", username="ada_l")
    base = str(client.make_url("")).rstrip("/")
    async with Browser.launch(tmp_path, javascript=True) as browser:
        await browser.goto(base + "/app/login")
        await browser.evaluate("document.querySelector('#email').value = 'tg-browser@example.com';"
                               "document.querySelector('#password').value = 'correct horse battery'")
        await browser.click("#sign-in")
        await browser.goto(f"{base}/tg/link/start?t={token}")
        await wait_for(browser, "!!document.querySelector('#tg-confirm-name')")
        assert await browser.text("#tg-confirm-name") == "Ada Lovelace"
        assert await browser.text("#tg-confirm-username") == "@ada_l"
        assert "#" not in await browser.url()
        assert await gateway.db.fetch_all("SELECT chat_id FROM telegram_links") == []
        await browser.screenshot(tmp_path / "tg-confirm.png")
        await browser.evaluate("document.querySelector('#tg-confirm-password').value = 'correct horse battery'")
        await browser.click("#tg-confirm-link")
        await wait_for(browser, "!!document.querySelector('#tg-linked-now')")
        assert browser.csp_refusals() == []
    linked = await gateway.db.fetch_all("SELECT chat_id FROM telegram_links")
    assert [int(row["chat_id"]) for row in linked] == [CHAT]
