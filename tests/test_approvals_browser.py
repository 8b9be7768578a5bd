"""Approvals in a real headless Chromium (scripts off): a second member approves a held payout with the code.

Needs /usr/bin/chromium (``scripts/ensure_chromium.sh``); without it these tests fail with that instruction.
"""

from __future__ import annotations

import pytest

from orbchain.web.keys import GATEWAY

from .approvals_support import PASSWORD, add_member, member_totp, next_code, set_policy
from .browser import Browser, assert_png, serve_app
from .browser import require_chromium  # noqa: F401 - autouse fixture
from .support import Devnet, signup
from .test_payouts import create, fund, payout_row


@pytest.fixture
async def served(aiohttp_server, aiohttp_client, make_config):
    return await serve_app(aiohttp_server, aiohttp_client, make_config)


async def test_a_second_member_approves_a_held_payout(served, tmp_path):
    gateway = served.app[GATEWAY]
    merchant = await signup(served)
    await fund(served, merchant, Devnet(served), amount="0.02")
    await set_policy(gateway, merchant.merchant_id, threshold_BTC="100")
    status, body = await create(served, merchant, amount="0.005")  # by the API key: someone else approves
    assert status == 200 and body["data"]["awaiting_approval"] is True
    track = body["data"]["track_id"]
    await add_member(served, gateway, merchant.merchant_id, "second@example.com")
    base = str(served.server.make_url("/")).rstrip("/")
    async with Browser.launch(tmp_path) as browser:
        await browser.goto(f"{base}/app/login")
        await browser.fill("#email", "second@example.com")
        await browser.fill("#password", PASSWORD)
        await browser.click("#sign-in")
        secret = await member_totp(gateway, merchant.merchant_id, "second@example.com")  # then sets up their 2FA
        await browser.goto(f"{base}/app")
        assert await browser.evaluate("!!document.querySelector(\"a[href='/app/approvals']\")")
        await browser.goto(f"{base}/app/approvals")
        assert await browser.evaluate(f"!!document.querySelector('#held-{track}')")
        assert_png(await browser.screenshot(tmp_path / "awaiting.png"))
        # A wrong code: refused, still held, the page says why.
        await browser.fill(f"#totp-{track}", "000000")
        await browser.click(f"#approve-button-{track}")
        assert "two-factor code" in await browser.html()
        assert (await payout_row(gateway, track))["stage"] == "held"
        await browser.goto(f"{base}/app/approvals")
        await browser.fill(f"#totp-{track}", next_code(gateway, secret))
        await browser.click(f"#approve-button-{track}")
        assert await browser.text("#approvals-none") == "Nothing is waiting."
        assert_png(await browser.screenshot(tmp_path / "approved.png"))
    assert (await payout_row(gateway, track))["stage"] == "queued"
