"""Issue 32's smaller dashboard fixes, over HTTP on SQLite and PostgreSQL: the 404 page, form defaults, labels."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

import orbchain.plugins as plugins_package
from orbchain.plugins.analytics.report import analytics, window
from orbchain.plugins.dashboard.views import status_words
from orbchain.plugins.swaps.dashboard import default_pair
from orbchain.web.keys import GATEWAY

from .dashboard_support import Visitor, paid_invoice
from .support import Devnet


@pytest.fixture
async def app_client(make_client, make_config):
    return await make_client(make_config(scheduler={"enabled": False}))


async def test_an_unknown_dashboard_address_is_an_html_page_not_json(app_client):
    signed_out = await app_client.get("/app/nope", allow_redirects=False)
    page = await signed_out.text()
    assert signed_out.status == 404 and signed_out.content_type == "text/html"
    assert "Page not found" in page and 'href="/app"' in page and 'id="nav"' not in page
    visitor = Visitor(app_client)
    await visitor.sign_up("missing@example.com")
    page = await visitor.get("/app/payments/nope/deeper", expect=404)
    assert "Page not found" in page and 'id="nav"' in page and "missing@example.com" in page
    posted = await app_client.post("/app/nope", data={"x": "1"}, allow_redirects=False)
    assert posted.status == 404 and posted.content_type == "text/html"
    # A page's address with a method it lacks stays 405; real pages and the JSON API's 404 are unchanged.
    wrong_method = await app_client.get("/app/logout", allow_redirects=False)
    assert wrong_method.status == 405 and wrong_method.content_type == "text/html"
    await visitor.get("/app/payments")
    api = await app_client.get("/v1/nope")
    assert api.status == 404 and (await api.json())["error"]["type"] == "not_found"


def _selected(page: str, select_id: str) -> str:
    """The option a ``<select>`` shows first (its ``selected`` one)."""
    select = re.search(rf'<select id="{select_id}".*?</select>', page, re.S).group(0)
    return re.search(r"<option selected>([^<]+)</option>", select).group(1)


async def test_the_swap_form_starts_from_a_coin_with_a_balance_to_another_coin(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("swapper@example.com")
    page = await visitor.get("/app/swaps")
    assert (_selected(page, "swap-from"), _selected(page, "swap-to")) == ("BTC", "LTC")  # no balance yet
    await paid_invoice(app_client, visitor, "0.5", coin="LTC")
    page = await visitor.get("/app/swaps")
    assert (_selected(page, "swap-from"), _selected(page, "swap-to")) == ("LTC", "BTC")


def test_the_swap_defaults_never_pair_a_coin_with_itself():
    assert default_pair(["BTC", "LTC", "XMR"], {"XMR": 5}) == {"from_coin": "XMR", "to_coin": "BTC"}
    assert default_pair(["BTC", "LTC"], {"BTC": 0}) == {"from_coin": "BTC", "to_coin": "LTC"}
    assert default_pair(["BTC"], {}) == {"from_coin": "BTC", "to_coin": "BTC"}  # one coin: nothing else to offer
    assert default_pair([], {}) == {}


def _snippet(page: str, link_id: str) -> str:
    return html.unescape(re.search(rf'id="snippet-{link_id}"[^>]*>(.*?)</pre>', page, re.S).group(1))


async def test_the_embed_button_says_what_the_merchant_chose(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("embed@example.com")
    await visitor.get("/app/links")
    await visitor.submit("/app/links", {"action": "create", "coin": "BTC", "amount_fiat": "5", "fiat_currency": "USD",
                                        "description": "Coffee <for> the team"})
    await visitor.submit("/app/links", {"action": "create", "coin": "BTC", "amount": "0.1"})
    await visitor.submit("/app/links", {"action": "create", "coin": "BTC"})
    page = await visitor.get("/app/links")
    ids = re.findall(r'id="snippet-([^"]+)"', page)
    labels = sorted(re.search(r'data-label="([^"]*)"', _snippet(page, i)).group(1) for i in ids)
    # The link's purpose, escaped; a priced link "pays", a pay-what-you-want one "donates".
    assert labels == ["Coffee &lt;for&gt; the team", "Donate crypto", "Pay with crypto"]
    assert "Coffee <for>" not in page
    chosen = ids[0]
    await visitor.submit("/app/links", {"action": "button", "link_id": chosen, "label": 'Tip "us" <3'}, expect=200)
    snippet = _snippet(visitor.page, chosen)
    assert 'data-label="Tip &#34;us&#34; &lt;3"' in snippet and ">Tip &#34;us&#34; &lt;3</a>" in snippet
    await visitor.submit("/app/links", {"action": "button", "link_id": chosen, "label": "x" * 81}, expect=400)
    assert 'id="error-label"' in visitor.page and 'value="' + "x" * 81 + '"' in visitor.page  # kept, explained
    await visitor.submit("/app/links", {"action": "button", "link_id": "nope", "label": "Hi"}, expect=404)


async def test_analytics_shows_fiat_to_the_cent_like_every_other_page(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("numbers@example.com")
    gateway = app_client.app[GATEWAY]
    merchant = await gateway.db.fetch_one("SELECT id FROM merchants WHERE email = :e", {"e": "numbers@example.com"})
    # USD is kept in 1e-8 dollars: 25.0002 and 0.005 (half up: 0.01), exactly, with no float on the way.
    await gateway.db.execute(
        "INSERT INTO analytics_daily (merchant_id, day, deposits_usd, payouts_usd, deposit_count, payout_count)"
        " VALUES (:m, :d, 2500020000, 500000, 1, 1)", {"m": merchant["id"], "d": window(gateway.now())[-1]})
    page = await visitor.get("/app/analytics")
    assert 'id="total-deposits">25.00 USD<' in page and 'id="total-payouts">0.01 USD<' in page
    assert '<td class="num" data-label="Deposits USD">25.00 USD</td>' in page and ": 25.00 USD</title>" in page
    assert "25.0002" not in page
    assert (await analytics(gateway, merchant["id"]))["totals"]["total_deposits_usd"] == "25.0002"  # the API's


RAW_STATUS = re.compile(r"\{\{\s*[\w.]*status\s*\}\}")


def test_no_dashboard_template_prints_a_status_code_raw():
    """Every status a dashboard page shows goes through ``status_words`` (one vocabulary: Credited beside Paid)."""
    root = Path(plugins_package.__file__).parent
    raw = [f"{path.relative_to(root)}: {found.group(0)}" for path in sorted(root.glob("*/templates/*.html"))
           for found in RAW_STATUS.finditer(path.read_text())]
    assert raw == []
    assert [status_words(code) for code in ("CREDITED", "ACTIVE", "pending_review", "Waiting", "Paid", 404)] == \
        ["Credited", "Active", "Pending review", "Waiting", "Paid", "404"]


async def test_statuses_read_as_words_not_codes(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("words@example.com")
    track_id = await paid_invoice(app_client, visitor)
    page = await visitor.get(f"/app/payments/{track_id}")
    assert '<td data-label="Status">Credited</td>' in page and "CREDITED" not in page
    await visitor.get("/app/subscriptions")
    await visitor.submit("/app/subscriptions", {"action": "create", "label": "Pro", "amount_usd": "9.50",
                                                "interval_days": "30", "accepted_coins": "BTC"})
    page = await visitor.get("/app/subscriptions")
    subscribe = re.search(r'href="http[^"]+(/subscribe/[^"]+)"', page).group(1)
    form = await (await app_client.get(subscribe)).text()
    token = re.search(r'name="csrf_token" value="([^"]*)"', form)
    fields = {"email": "customer@example.com", **({"csrf_token": html.unescape(token.group(1))} if token else {})}
    await app_client.post(subscribe, data=fields, allow_redirects=False)
    page = await visitor.get("/app/subscriptions")
    # Waiting for its first payment: a sign-up listed apart, not yet a subscription (issue 42 item 9).
    assert "customer@example.com" in page.split('id="pending-table"', 1)[1] and ">PENDING<" not in page
    gateway = app_client.app[GATEWAY]
    first = await gateway.db.fetch_one("SELECT address, pay_amount FROM payments WHERE order_id LIKE 'subscription:%'")
    devnet = Devnet(app_client)
    await devnet.pay("BTC", first["address"], gateway.coins.require("BTC").format(gateway.db.to_int(first["pay_amount"])))
    await devnet.mine(2)
    page = await visitor.get("/app/subscriptions")
    assert '<td data-label="Status">Active</td>' in page and ">ACTIVE<" not in page


async def test_a_webhook_url_without_a_secret_is_said_on_the_settings_page(app_client):
    """Issue 49 item 10: the configuration problem the log states once is shown where the merchant fixes it."""
    visitor = Visitor(app_client)
    await visitor.sign_up("unsigned@example.com")
    assert 'id="webhook-unsigned"' not in await visitor.get("/app/settings")
    gateway = app_client.app[GATEWAY]
    await gateway.db.execute("UPDATE merchants SET webhook_url = 'https://shop.example/hook', webhook_secret = NULL"
                             " WHERE email = 'unsigned@example.com'")
    page = await visitor.get("/app/settings")
    assert 'id="webhook-unsigned"' in page and "it has no signing secret" in page
