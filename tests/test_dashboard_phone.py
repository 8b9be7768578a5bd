"""The merchant dashboard on a phone (390x844) in headless Chromium, JavaScript off (issue 32 item 3).

One browser session: a merchant with two payments (one paid), a payout, a
transfer, a payment link, a scoped key and three webhook deliveries opens the
payments, payouts, transfers, links, keys and webhook log pages. On the phone the
navigation is one "Menu" disclosure (``<details>``, no script) and the list
tables reflow into labelled cards; on a desktop the same markup is a visible
navigation bar and real tables. Screenshots land in the test's ``tmp_path``.
"""

from __future__ import annotations

import json

from orbchain.core.events.outbox import enqueue_event
from orbchain.core.events.webhooks import deliver_due
from orbchain.web.keys import GATEWAY

from .browser import Browser, assert_png, serve_app
from .browser import require_chromium  # noqa: F401 - autouse fixture
from .support import Devnet, WebhookReceiver, api, signup

DESKTOP = {"width": 1280, "height": 800}
PAGE_FACTS = """(() => {
  const nav = document.querySelector('header.topbar');
  return {width: document.documentElement.scrollWidth, view: innerWidth,
          height: document.documentElement.scrollHeight, topbar: nav.getBoundingClientRect().height};
})()"""
MAX_TOPBAR = 80  # one row: logo, Menu, account, Sign out
# The webhook log: the bar, the pager and the footer, then at most this much per delivery's card
# (three cards took about 920 px in all; before the cards, 11,600 px).
MAX_PAGE_CHROME, MAX_CARD_HEIGHT = 500, 300
VISIBLE_LINKS = "[...document.querySelectorAll('#nav a')].filter(a => a.checkVisibility()).length"
GROUP_TITLES = "[...document.querySelectorAll('.nav-group-title')].map(e => e.textContent)"
BTC_DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
# Each list table's first card: the labels its cells show (from data-label; ' / ""' keeps them from screen
# readers, which read the header cells).
CARD_LABELS = r"""[...document.querySelector(TABLE + ' tbody tr').cells]
  .filter(td => td.getClientRects().length && getComputedStyle(td).display !== 'table-cell')
  .map(td => getComputedStyle(td, '::before').content.replace(/ \/ ""$/, ''))"""
# page → (its list table, the labels of its first card)
EXPECTED_LABELS = {
    "payments": ("table.cards", ['"Payment"', '"Status"', '"Amount"', '"Type"', '"Created"']),
    "payouts": ("#payouts-table", ['"Track id"', '"Coin"', '"Amount"', '"Destination"', '"Status"']),
    "transfers": ("#transfers-table", ['"Direction"', '"Account"', '"Coin"', '"Amount"', '"When"']),
    "links": ("#links-table", ['"Link"', '"Price"', '"Uses"', '"State"', "none"]),
    "keys": ("table.cards", ['"Label"', '"Prefix"', '"Scopes"', '"Issued by"', '"Last used"', '"State"', "none"]),
    # A delivered event can be sent again (issue 49): its card ends with the button, unlabelled as in links and keys.
    "webhooks": ("table.cards", ['"When"', '"Event"', '"Attempt"', '"Result"', '"Payload"', '"Response"', "none"]),
}


async def money_moved(client, address: str) -> None:
    """The phone merchant is paid 0.015 BTC at ``address``, pays out, sends a transfer and has a payment link."""
    devnet = Devnet(client)
    await devnet.pay("BTC", address, "0.015")
    await devnet.mine(6)
    status, body = await api(client, "POST", "/dashboard/auth/login", {},
                             json={"email": "phone@example.com", "password": "correct horse battery"})
    assert status == 200, body
    jwt = {"Authorization": f"Bearer {body['data']['token']}"}
    friend = await signup(client, email="friend@example.com")
    _, body = await api(client, "GET", "/dashboard/account", friend.jwt)
    for path, payload in (("/dashboard/transfer", {"to_account_id": body["data"]["account"]["account_id"],
                                                   "coin": "BTC", "amount": "0.001"}),
                          ("/dashboard/create-payout", {"currency": "BTC", "address": BTC_DEST, "amount": "0.002"}),
                          ("/dashboard/payment-links", {"coin": "BTC", "description": "Support the shop"})):
        status, body = await api(client, "POST", path, jwt, json=payload)
        assert status == 200, (path, body)


async def test_lists_fit_a_phone_as_cards(aiohttp_server, aiohttp_client, make_config, tmp_path):
    client = await serve_app(aiohttp_server, aiohttp_client, make_config)
    gateway = client.app[GATEWAY]
    base = str(client.server.make_url("/")).rstrip("/")
    receiver = WebhookReceiver()
    hook_url = await receiver.start()
    try:
        async with Browser.launch(tmp_path) as browser:
            await browser.goto(f"{base}/app/signup")
            await browser.fill("#email", "phone@example.com")
            await browser.fill("#password", "correct horse battery")
            await browser.click("#create-account")
            api_key = (await browser.text("#merchant_api_key") or "").strip()
            await browser.click("#continue")
            merchant = await gateway.db.fetch_val("SELECT id FROM merchants WHERE email = :e",
                                                  {"e": "phone@example.com"})
            invoices = []
            for order in ("order-1", "order-2"):
                response = await client.post("/v1/payment/invoice", headers={"merchant_api_key": api_key},
                                             json={"amount": "0.015", "currency": "BTC", "order_id": order,
                                                   "description": "A long description of what was bought"})
                assert response.status == 200, await response.text()
                invoices.append((await response.json())["data"])
            await money_moved(client, invoices[0]["address"])
            await gateway.db.execute("UPDATE merchants SET webhook_url = :u, webhook_secret = :s WHERE id = :id",
                                     {"u": hook_url, "s": "s" * 32, "id": merchant})
            for n in range(3):
                body = {"type": "payment", "track_id": f"TRK-{n}", "status": "Paid", "amount": "0.00150000",
                        "currency": "BTC", "transactions": [{"tx_hash": "ab" * 32, "amount": "0.00150000"}]}
                await enqueue_event(gateway, merchant_id=merchant, event_type="payment.paid", body=body,
                                    logical_key=f"payment.paid:TRK-{n}")
            await deliver_due(gateway)
            await browser.goto(f"{base}/app/keys")
            await browser.fill("#label", "shop backend")
            await browser.check("#scope-payment-read")
            await browser.click("#create-key")

            for page, (table, labels) in EXPECTED_LABELS.items():
                await browser.goto(f"{base}/app/{page}")
                facts = await browser.evaluate(PAGE_FACTS)
                assert facts["width"] <= facts["view"], (page, facts)  # nothing cut off or scrolled sideways
                assert facts["topbar"] <= MAX_TOPBAR, (page, facts)  # before: 303 px of links on every page
                assert await browser.evaluate(CARD_LABELS.replace("TABLE", json.dumps(table))) == labels, page
                assert_png(await browser.screenshot(tmp_path / f"phone-{page}.png"))
                if page == "webhooks":  # before: 11,600 px for 3 rows, the previews squeezed to one character
                    rows = await browser.evaluate("document.querySelectorAll('#webhook-logs tbody tr').length")
                    assert rows >= 3  # ours, and the payment's, payout's and transfer's events
                    assert facts["height"] <= MAX_PAGE_CHROME + rows * MAX_CARD_HEIGHT, (rows, facts)

            # The menu: closed, its links out of sight; opened from the keyboard, every link there, grouped.
            links = await browser.evaluate("document.querySelectorAll('#nav a').length")
            assert links >= 16  # the dashboard's seven and the installed plugins' pages
            assert await browser.evaluate(VISIBLE_LINKS) == 0
            await browser.page.focus("#menu-button")
            await browser.page.keyboard.press("Enter")
            assert await browser.evaluate("document.getElementById('menu').open") is True
            assert await browser.evaluate(VISIBLE_LINKS) == links
            assert await browser.evaluate(GROUP_TITLES) == ["Overview", "Get paid", "Money", "Developers",
                                                            "Account"]
            assert_png(await browser.screenshot(tmp_path / "phone-menu.png"))
            await browser.click("#nav a[href='/app/keys']")
            assert await browser.url() == f"{base}/app/keys"
            assert await browser.evaluate("document.getElementById('menu').open") is False

            # A desktop: no button, the links in the bar, real tables; screen readers see the links.
            await browser.page.set_viewport_size(DESKTOP)
            await browser.goto(f"{base}/app/webhooks")
            assert await browser.evaluate("getComputedStyle(document.getElementById('menu-button')).display") == "none"
            assert await browser.evaluate(VISIBLE_LINKS) == links
            assert await browser.evaluate("getComputedStyle(document.querySelector('#webhook-logs td')).display") \
                == "table-cell"
            exposed = browser.page.get_by_role("link", name="API keys", exact=True)  # hidden elements left out
            assert await exposed.count() == 1, "the desktop bar's links are not exposed"
            assert_png(await browser.screenshot(tmp_path / "desktop-webhooks.png"))
    finally:
        await receiver.close()
    print(f"screenshots: {tmp_path}")
