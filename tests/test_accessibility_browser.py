"""Every page a payer or merchant sees is axe-core clean, on a desktop and on a phone (issue 32's accessibility gate).

One server, one merchant and one headless Chromium (page scripts off, as a payer
without JavaScript) visit the hosted pages (on-chain and Lightning, unpaid, part
paid and paid; link, tip, subscribe and a subscription's manage page, some in
another language and with an error shown), sign-in and sign-up, and every
dashboard page including the forms with their errors shown, the payout
review, the recovery codes shown once and the sign-in's code page. axe-core (npm, installed by scripts/ensure_node_tools.sh, never a CDN)
is injected from DevTools into each page at 1280x800 and 390x844; any violation
fails, with its rule, impact and the offending elements. Screenshots land in
the folder the test prints.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyotp
import pytest

from orbchain.chains.lightning import settlement
from orbchain.chains.lightning.receive import lightning_chain
from orbchain.core.events.outbox import enqueue_event
from orbchain.core.events.webhooks import deliver_due
from orbchain.plugins.teams import invites as team_invites
from orbchain.web.keys import GATEWAY

from .anvil import TOOLS
from .browser import VIEWPORT, Browser, serve_app
from .browser import require_chromium  # noqa: F401 - autouse fixture
from .support import Devnet, WebhookReceiver, api, signup
from .teams_support import join_link_to, mailbox

AXE = TOOLS / "node_modules" / "axe-core" / "axe.min.js"
DESKTOP = {"width": 1280, "height": 800}
SAFE = re.compile(r"\W+")  # a page's name as a file name
VIEWPORTS = {"desktop": DESKTOP, "phone": VIEWPORT}
SIGNED_OUT = {"sign in": "/app/login", "sign up": "/app/signup"}
EMAIL, PASSWORD = "axe@example.com", "correct horse battery"
BTC_DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
# Each violation: its rule, impact and up to three offending elements with axe's own summary.
RUN_AXE = """axe.run(document, {resultTypes: ['violations']}).then(r => r.violations.map(v => ({
  id: v.id, impact: v.impact, help: v.help,
  nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + (n.failureSummary || '').replace(/\\s+/g, ' '))})))"""


@pytest.fixture
def axe_source() -> str:
    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: run scripts/ensure_node_tools.sh (installs npm axe-core)", pytrace=False)
    return AXE.read_text()


async def violations(browser: Browser, source: str) -> list[dict[str, Any]]:
    """axe-core's violations on the page now loaded, injected from DevTools.

    axe's promise settles on timers, which run only while scripts may; the page's own scripts were
    skipped at load and do not run now, so the page checked is still the one a payer without JavaScript sees."""
    await scripts_off(browser, False)
    try:
        if not await browser.evaluate("typeof axe !== 'undefined'"):  # once per document, not per viewport
            await browser.evaluate(source)
        return await browser.evaluate(RUN_AXE, timeout=60)
    finally:
        await scripts_off(browser, True)


async def scripts_off(browser: Browser, off: bool) -> None:
    """Page scripts off or on for the page as it is, a DevTools command: Playwright fixes
    ``java_script_enabled`` for the whole browser, and while it holds scripts off no timer runs."""
    await browser.cdp("Emulation.setScriptExecutionDisabled", {"value": off})


def spec_refresh(problem: dict[str, Any], url: str) -> bool:
    """The hosted page's 15 s refresh, which SPEC 4.14 requires of it without scripts (docs/decisions.md).

    It sits inside ``<noscript>``: axe sees it only because these checks load pages with scripts off;
    a browser running scripts never parses it and follows the page's event stream instead."""
    return problem["id"] == "meta-refresh" and "/pay/" in url


class Site:
    """The served app, its merchant's credentials and the pages (name → path) to check."""

    def __init__(self, client: Any, signup: Any) -> None:
        self.client = client
        self.gateway = client.app[GATEWAY]
        self.base = str(client.server.make_url("/")).rstrip("/")
        self.merchant = signup
        self.pages: dict[str, str] = {}

    def url(self, path: str) -> str:
        return path if path.startswith("http") else self.base + path

    async def invoice(self, amount: str, currency: str) -> dict[str, Any]:
        status, body = await api(self.client, "POST", "/v1/payment/invoice", self.merchant.merchant_key,
                                 json={"amount": amount, "currency": currency, "description": "Coffee",
                                       "order_id": f"order-{len(self.pages)}", "return_url": "https://shop.example/"})
        assert status == 200, body
        return body["data"]


async def open_site(client: Any) -> Site:
    """One merchant with on-chain and Lightning payments in every state, a link, a plan and webhook deliveries."""
    site = Site(client, await signup(client, email=EMAIL, password=PASSWORD))
    jwt = site.merchant.jwt
    status, body = await api(client, "PUT", "/dashboard/settings/coins", jwt,
                             json={"accepted_coins": ["BTC", "LTC", "BTC_LN"]})
    assert status == 200, body
    devnet = Devnet(client)
    waiting = await site.invoice("0.01", "BTC")
    part = await site.invoice("0.01", "BTC")
    await devnet.pay("BTC", part["address"], "0.004")
    paid = await site.invoice("0.01", "BTC")
    await devnet.pay("BTC", paid["address"], "0.01")
    await devnet.mine(6)
    ln_waiting = await site.invoice("0.00021", "BTC_LN")
    ln_paid = await site.invoice("0.00021", "BTC_LN")
    node = lightning_chain(site.gateway).backend
    await node.settle(ln_paid["lightning"]["bolt11"])
    assert await settlement.poll_open_invoices(site.gateway, node) == 1
    status, body = await api(client, "POST", "/dashboard/payment-links", jwt,
                             json={"coin": "BTC", "description": "Support the shop"})
    assert status == 200, body
    link = body["data"]["url"]
    status, body = await api(client, "POST", "/dashboard/plans", jwt, json={
        "label": "Newsletter", "amount_usd": "5", "interval_sec": 30 * 86400, "accepted_coins": ["BTC"]})
    assert status == 200, body
    plan = body["data"]["subscribe_url"]
    response = await client.post(f"/subscribe/{body['data']['id']}", data={"email": "reader@example.com"},
                                 allow_redirects=False)
    assert response.status == 303  # enrolled: the first period's invoice is open
    # Not a subscription of the API until paid (issue 42 item 9): its manage page's token, where it is kept.
    token = await site.gateway.db.fetch_val("SELECT magic_token FROM subscriptions")
    manage = f"/subscribe/manage/{token}"
    _, body = await api(client, "GET", "/dashboard/account", jwt)
    account = body["data"]["account"]["account_id"]
    with mailbox() as mails:  # a pending invitation: the Team page lists it, and both of its links are pages
        invitation = await team_invites.create(site.gateway, site.merchant.merchant_id,
                                               {"email": "teammate@example.com", "role": "viewer"}, None)
        await team_invites.send_join_link(site.gateway, site.merchant.merchant_id, invitation.id, None)
    site.pages = {
        "team invitation, mailed join link": join_link_to(mails, "teammate@example.com"),
        "team invitation, its page": invitation.page_link[invitation.page_link.index("/app/team/accept"):],
        "pay on-chain waiting": waiting["payment_url"], "pay on-chain part paid": part["payment_url"],
        "pay on-chain paid": paid["payment_url"], "pay Lightning waiting": ln_waiting["payment_url"],
        "pay Lightning paid": ln_paid["payment_url"], "link": link, "tip": f"/tip/{account}", "subscribe": plan,
        "subscribe in Russian": f"{plan}?lang=ru", "subscription manage": manage,
        "subscription manage in German": f"{manage}?lang=de", "link amount refused in Spanish": f"{link}?amount=1,5&lang=es",
        "home": "/app", "payments": "/app/payments", "payment detail": f"/app/payments/{paid['track_id']}",
        "payment part paid detail": f"/app/payments/{part['track_id']}", "new payment": "/app/payments/new",
        "payouts": "/app/payouts", "transfers": "/app/transfers", "settings": "/app/settings",
        "security": "/app/security", "webhooks": "/app/webhooks", "keys": "/app/keys",
        "auto-withdraw": "/app/auto-withdraw", "sign-in methods": "/app/sign-in-methods",
        "tip page entry": "/app/tip-page",
    }
    return site


async def deliver_webhooks(site: Site, hook_url: str) -> None:
    """A delivered webhook in the log (besides the ones the payments above sent)."""
    merchant = await site.gateway.db.fetch_val("SELECT id FROM merchants WHERE email = :e", {"e": EMAIL})
    await site.gateway.db.execute("UPDATE merchants SET webhook_url = :u, webhook_secret = :s WHERE id = :id",
                                  {"u": hook_url, "s": "s" * 32, "id": merchant})
    body = {"type": "payment", "track_id": "TRK-1", "status": "Paid", "amount": "0.01", "currency": "BTC"}
    await enqueue_event(site.gateway, merchant_id=merchant, event_type="payment.paid", body=body,
                        logical_key="payment.paid:TRK-1")
    await deliver_due(site.gateway)


async def sign_in_page_submitted(browser: Browser, site: Site) -> None:
    await browser.goto(site.url("/app/login"))
    await browser.fill("#email", EMAIL)
    await browser.fill("#password", PASSWORD)
    await browser.click("#sign-in")


async def sign_in(browser: Browser, site: Site) -> None:
    await sign_in_page_submitted(browser, site)
    assert await browser.url() == site.url("/app")


async def show_payment_errors(browser: Browser, site: Site) -> None:
    """The new payment form as a wrong submission brings it back: every field's error beside it."""
    await browser.goto(site.url("/app/payments/new"))
    await browser.fill("#amount", "-1")
    await browser.click("#more-options > summary", navigates=False)  # the return URL is under "More options"
    await browser.fill("#return_url", "not a url")
    await browser.click("#create-payment")
    assert 'aria-invalid="true"' in await browser.html()


async def show_payout_review(browser: Browser, site: Site) -> None:
    """A payout's review step, before anything is sent."""
    await browser.goto(site.url("/app/payouts"))
    await browser.select("#payout-currency", "BTC")
    await browser.fill("#payout-address", BTC_DEST)
    await browser.fill("#payout-amount", "0.001")
    await browser.click("#send-payout")
    assert "review_token" in await browser.html()


async def show_recovery_codes(browser: Browser, site: Site) -> None:
    """2FA turned on from the Security page: the recovery codes, shown this once."""
    await browser.goto(site.url("/app/security"))
    await browser.click("#setup-totp")
    secret = re.search(r'id="totp-secret"[^>]*>([A-Z2-7]+)</code>', await browser.html()).group(1)
    await browser.fill("#code", pyotp.TOTP(secret).at(site.gateway.now()))
    await browser.click("#verify-totp")
    assert 'id="recovery-codes"' in await browser.html()


async def show_sign_in_code(browser: Browser, site: Site) -> None:
    """Signed out, the sign-in of a person with 2FA on: its code page, with a wrong code's error shown."""
    await browser.context.clear_cookies()
    await sign_in_page_submitted(browser, site)
    assert await browser.url() == site.url("/app/login/code")
    await browser.fill("#totp_code", "12")
    await browser.click("#sign-in-code")
    assert 'aria-invalid="true"' in await browser.html()


async def check(browser: Browser, source: str, name: str, shots: Path, found: dict[str, list]) -> None:
    """axe on the page shown, at each viewport (the same document laid out again, no reload)."""
    for size, metrics in VIEWPORTS.items():
        await browser.page.set_viewport_size(metrics)
        problems = [p for p in await violations(browser, source) if not spec_refresh(p, await browser.url())]
        if problems:
            found[f"{name} ({size}) {await browser.url()}"] = problems
        await browser.screenshot(shots / f"{SAFE.sub('-', name).strip('-')}-{size}.png")


async def test_every_page_is_axe_clean_on_desktop_and_phone(aiohttp_server, aiohttp_client, make_config,
                                                           tmp_path, axe_source):
    client = await serve_app(aiohttp_server, aiohttp_client, make_config)
    site = await open_site(client)
    receiver = WebhookReceiver()
    await deliver_webhooks(site, await receiver.start())
    shots = tmp_path / "screenshots"
    shots.mkdir()
    found: dict[str, list] = {}
    try:
        async with Browser.launch(tmp_path, javascript=True) as browser:
            await scripts_off(browser, True)  # as a payer without JavaScript; on only while axe runs
            await browser.goto("data:text/html,<title>off</title><script>document.title = 'ran'</script>")
            assert await browser.evaluate("document.title") == "off"  # page scripts really are off
            for name, path in SIGNED_OUT.items():
                await browser.goto(site.url(path))
                await check(browser, axe_source, name, shots, found)
            await sign_in(browser, site)
            nav = await browser.evaluate("[...document.querySelectorAll('#nav a')].map(a => a.pathname)")
            plugin_pages = {f"plugin {p}": p for p in nav if p not in site.pages.values()}
            assert len(plugin_pages) >= 8, nav  # links, subscriptions, schedules, swaps, analytics, ...
            for name, path in {**site.pages, **plugin_pages}.items():
                await browser.goto(site.url(path))
                await check(browser, axe_source, name, shots, found)
            for name, show in (("new payment with errors", show_payment_errors),
                               ("payout review", show_payout_review), ("recovery codes", show_recovery_codes),
                               ("sign-in code with an error", show_sign_in_code)):
                await show(browser, site)
                await check(browser, axe_source, name, shots, found)
    finally:
        await receiver.close()
    print(f"screenshots: {shots}")
    assert not found, json.dumps(found, indent=1)
