"""Teams in a real headless Chromium (scripts off): invite a viewer, they join from the mailed link and sign in,
a payout is refused. The inviter's page shows no join link (issue 42): the development server without SMTP
writes the e-mail to its log, which plays the viewer's mailbox here.

Needs /usr/bin/chromium (``scripts/ensure_chromium.sh``); without it these tests fail with that instruction.
"""

from __future__ import annotations

import json

import pytest

from .browser import Browser, assert_png, serve_app
from .browser import require_chromium  # noqa: F401 - autouse fixture
from .teams_support import join_link_to, mailbox

PASSWORD = "correct horse battery"
BTC_DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"


@pytest.fixture
async def served(aiohttp_server, aiohttp_client, make_config):
    return await serve_app(aiohttp_server, aiohttp_client, make_config)


async def test_invite_a_viewer_who_signs_in_and_is_refused_a_payout(served, tmp_path):
    base = str(served.server.make_url("/")).rstrip("/")
    async with Browser.launch(tmp_path) as browser:
        await browser.goto(f"{base}/app/signup")
        await browser.fill("#email", "boss@example.com")
        await browser.fill("#password", PASSWORD)
        await browser.click("#create-account")
        await browser.click("#continue")

        await browser.goto(f"{base}/app/team")
        await browser.fill("#invite-email", "viewer@example.com")
        await browser.select("#invite-role", "viewer")
        with mailbox() as mails:
            await browser.click("#send-invite")
        link = join_link_to(mails, "viewer@example.com")
        assert "written to the server's log" in (await browser.text("#invite-delivery") or "")
        assert link.split("token=")[1] not in await browser.html()  # the inviter never sees the join link
        assert_png(await browser.screenshot(tmp_path / "invited.png"))
        await browser.click("#logout")

        # The invited person opens the mailed link, chooses a password, and signs in with their own e-mail.
        await browser.goto(f"{base}{link}")
        assert await browser.text("#invite-email") == "viewer@example.com"
        await browser.fill("#password", PASSWORD)
        await browser.fill("#password_confirm", PASSWORD)
        await browser.click("#accept")
        assert (await browser.url()).startswith(f"{base}/app/login")
        assert await browser.evaluate("document.querySelector('#email').value") == "viewer@example.com"
        await browser.fill("#password", PASSWORD)
        await browser.click("#sign-in")
        assert await browser.url() == f"{base}/app"

        # A viewer sees payouts but no form to send one, and no API keys in the navigation.
        await browser.goto(f"{base}/app/payouts")
        assert await browser.evaluate("!!document.querySelector('#payouts-table')")
        assert await browser.evaluate("!document.querySelector('#payout-form')")
        assert await browser.evaluate("!document.querySelector(\"a[href='/app/keys']\")")
        assert_png(await browser.screenshot(tmp_path / "viewer_payouts.png"))

        # A payout form posted anyway (one kept from before, say) is refused with the missing permission.
        csrf = await browser.evaluate("document.querySelector('input[name=csrf_token]').value")
        fields = {"csrf_token": csrf, "currency": "BTC", "address": BTC_DEST, "amount": "0.001"}
        await browser.evaluate(
            "(f => { const form = document.createElement('form'); form.method = 'post'; form.action = '/app/payouts';"
            " for (const [k, v] of Object.entries(f)) { const i = document.createElement('input'); i.name = k;"
            " i.value = v; form.appendChild(i); } const b = document.createElement('button'); b.id = 'forced';"
            " b.textContent = 'Send'; form.appendChild(b); document.body.prepend(form); })(" + json.dumps(fields) + ")")
        await browser.click("#forced")
        page = await browser.html()
        assert "Not allowed" in page and "payout:create" in page
        assert_png(await browser.screenshot(tmp_path / "viewer_refused.png"))
