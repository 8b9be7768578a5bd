"""The dashboard's create-invoice, webhook and payment-link forms, and what its payment lists show (issue 32).

Over HTTP as a browser without JavaScript (``tests/dashboard_support.py``), on SQLite and PostgreSQL:
the currency picker and its default, every field's error beside the field at once with the input kept,
and payments a merchant can tell apart (amount in coin and fiat, description, order id).
"""

from __future__ import annotations

import html
import re
from decimal import Decimal

import pytest

from orbchain.web.keys import GATEWAY

from .dashboard_support import Visitor, paid_invoice

AUTOWITHDRAW = "/app/auto-withdraw"


@pytest.fixture
async def app_client(make_client, make_config):
    return await make_client(make_config(scheduler={"enabled": False}))


def field_error(page: str, name: str) -> str:
    """The error shown beside ``name``'s input, which must point at it (aria-invalid, aria-describedby)."""
    assert re.search(rf'name="{name}"[^>]*aria-invalid="true" aria-describedby="error-{name}"', page), name
    found = re.search(rf'<p class="field-error" id="error-{name}">([^<]*)</p>', page)
    assert found, f"no error beside {name}"
    return html.unescape(found.group(1))


def options(page: str, select_id: str) -> list[tuple[str, bool]]:
    """The ``<option>`` values of one ``<select>`` and whether each is selected."""
    select = re.search(rf'<select id="{select_id}".*?</select>', page, re.S).group(0)
    return [(value, bool(selected)) for value, selected in
            re.findall(r'<option value="([^"]*)"( selected)?', select)]


async def test_the_currency_is_a_picker_of_accepted_coins_and_fiat_with_the_api_default_chosen(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("picker@example.com")
    gateway = app_client.app[GATEWAY]
    await visitor.get("/app/settings")
    await visitor.submit("/app/settings/coins", {"accepted_coins": ["LTC", "BTC"]})
    page = await visitor.get("/app/payments/new")
    coins = [row["accepted_coins"] for row in await gateway.db.fetch_all("SELECT accepted_coins FROM merchants")]
    assert coins and "LTC" in coins[0]
    offered = options(page, "currency")
    assert [value for value, _ in offered] == ["LTC", "BTC", "USD", "EUR", "GBP", "JPY", "CAD", "AUD", "CHF",
                                                "CNY", "INR", "RUB"]
    assert [value for value, selected in offered if selected] == ["LTC"]  # the first accepted coin, as the API
    assert ">LTC (default)</option>" in page and "LTC is preselected" in page

    # A form without the field (an old page, a script) gets the same default as the API: the first accepted coin.
    response = await visitor.submit("/app/payments/new", {"type": "invoice", "amount": "1"})
    track_id = response.headers["Location"].split("/")[-1].split("?")[0]
    row = await gateway.db.fetch_one("SELECT currency FROM payments WHERE track_id = :t", {"t": track_id})
    assert row["currency"] == "LTC"

    # A fiat invoice: priced in USD, paid in the first accepted coin.
    await visitor.get("/app/payments/new")
    response = await visitor.submit("/app/payments/new", {"type": "invoice", "amount": "25", "currency": "USD",
                                                          "description": "Blue mug", "order_id": "A-17"})
    track_id = response.headers["Location"].split("/")[-1].split("?")[0]
    row = await gateway.db.fetch_one("SELECT currency, fiat_currency, pay_currency FROM payments"
                                     " WHERE track_id = :t", {"t": track_id})
    assert (row["currency"], row["fiat_currency"], row["pay_currency"]) == ("USD", "USD", "LTC")

    # A value the picker does not offer is refused beside the field, on the server, whatever the browser sent.
    for forged in ({"type": "invoice", "currency": "DOGE"}, {"type": "white_label", "currency": "USD"},
                   {"type": "invoice", "currency": "<script>"}):
        await visitor.get("/app/payments/new")
        await visitor.submit("/app/payments/new", {"amount": "1", **forged}, expect=400)
        assert field_error(visitor.page, "currency").startswith("Choose one of your accepted coins")
    assert "<script>" not in visitor.page
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM payments") == 2


async def test_every_bad_field_is_said_beside_it_at_once_and_the_typed_input_stays(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("errors@example.com")
    await visitor.get("/app/payments/new")
    typed = {"type": "invoice", "currency": "BTC", "amount": "-3", "lifetime": "99999", "email": "nope",
             "return_url": "ftp://shop.example", "order_id": "o" * 129, "description": "Red <b>hat</b>"}
    await visitor.submit("/app/payments/new", typed, expect=400)
    page = visitor.page
    errors = {name: field_error(page, name) for name in ("amount", "lifetime", "email", "return_url", "order_id")}
    assert errors == {
        "amount": "Must be greater than 0.", "lifetime": "Must be at most 43200.",
        "email": "Must be an email address.", "return_url": "Must be an http or https URL.",
        "order_id": "Must be at most 128 characters.",
    }
    # One summary lists them by their labels, each linking to its field's error; no raw field name is shown.
    summary = re.search(r'<div class="notice notice-error" role="alert" id="form-errors">(.*?)</div>', page, re.S)
    assert summary and "5 fields need a change; nothing was saved." in summary.group(1)
    assert '<a href="#error-return_url">Return URL</a>: Must be an http or https URL.' in summary.group(1)
    assert "return_url:" not in page and "order_id:" not in page
    # What was typed comes back (escaped), the chosen type and currency too.
    for name in ("amount", "lifetime", "email", "return_url"):
        assert f'name="{name}"' in page and f'value="{html.escape(typed[name])}"' in page
    assert 'value="Red &lt;b&gt;hat&lt;/b&gt;"' in page
    assert 'id="type-invoice" checked' in page and ("BTC", True) in options(page, "currency")
    assert 'aria-invalid' not in re.search(r'<input id="description"[^>]*>', page).group(0)

    # A rule checked once the form is valid (the coin's largest amount) is said beside its field too.
    await visitor.submit("/app/payments/new", {"type": "invoice", "currency": "BTC", "amount": "30000000",
                                               "order_id": "kept"}, expect=400)
    assert "21000000" in field_error(visitor.page, "amount")
    assert 'value="30000000"' in visitor.page and 'value="kept"' in visitor.page
    assert await app_client.app[GATEWAY].db.fetch_val("SELECT COUNT(*) FROM payments") == 0


async def test_payment_lists_tell_payments_apart_and_balances_show_their_usd_value(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("lists@example.com")
    gateway = app_client.app[GATEWAY]
    await paid_invoice(app_client, visitor)  # 0.01 BTC, order-1: 0.0099 BTC credited
    await visitor.get("/app/payments/new")
    await visitor.submit("/app/payments/new", {"type": "invoice", "amount": "25", "currency": "USD",
                                               "description": "Blue mug", "order_id": "A-17"})
    await visitor.get("/app/payments/new")
    await visitor.submit("/app/payments/new", {"type": "static_address", "currency": "BTC"})
    fiat_row = await gateway.db.fetch_one("SELECT pay_amount FROM payments WHERE order_id = 'A-17'")
    pay_btc = gateway.coins.require("BTC").format(gateway.db.to_int(fiat_row["pay_amount"]))

    for path in ("/app/payments", "/app"):
        page = await visitor.get(path)
        rows = re.findall(r"<tr><td data-label=\"Payment\">.*?</tr>", page, re.S)
        assert len(rows) == 3, path
        fiat, static, paid = (next(r for r in rows if mark in r) for mark in ("A-17", "static_address", "order-1"))
        assert "Blue mug" in fiat and "A-17" in fiat and f"{pay_btc} BTC" in fiat and "25.00 USD" in fiat
        assert "any amount of BTC" in static and "USD" not in static
        assert "0.01 BTC" in paid and "order-1" in paid and "USD" not in paid

    # The balance card: the coin amount, and its USD value at the price service's quote, to the cent.
    price = await gateway.services["prices"].price("BTC")
    expected = (Decimal("0.0099") * price).quantize(Decimal("0.01"))
    page = await visitor.get("/app")
    assert re.search(r'data-coin="BTC">0\.0099</p>\s*<p class="muted fiat-value" data-fiat="BTC">≈ '
                     + re.escape(f"{expected:,f} USD") + "</p>", page), page[page.find("balances"):][:600]


async def test_the_webhook_form_keeps_what_was_typed_and_says_what_is_wrong_beside_it(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("hook@example.com")
    await visitor.get("/app/settings")
    await visitor.submit("/app/settings/webhook", {"webhook_url": "not a url", "rotate_secret": "1"}, expect=400)
    assert field_error(visitor.page, "webhook_url") == "Must be an http or https URL."
    assert 'value="not a url"' in visitor.page and 'id="rotate_secret" checked' in visitor.page
    long_url = "https://shop.example/" + "h" * 500
    await visitor.submit("/app/settings/webhook", {"webhook_url": long_url}, expect=400)
    assert field_error(visitor.page, "webhook_url") == "Must be at most 500 characters."
    assert f'value="{long_url}"' in visitor.page
    assert 'id="rotate_secret" checked' not in visitor.page
    row = await app_client.app[GATEWAY].db.fetch_one("SELECT webhook_url FROM merchants")
    assert row["webhook_url"] in (None, "")


async def test_the_payment_link_form_says_every_problem_at_once_and_keeps_the_input(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("links@example.com")
    await visitor.get("/app/links")
    await visitor.submit("/app/links", {"action": "create", "coin": "LTC", "amount": "abc", "lifetime": "0",
                                        "description": "d" * 501}, expect=400)
    page = visitor.page
    assert field_error(page, "amount") and field_error(page, "lifetime") == "Must be at least 1."
    assert field_error(page, "description") == "Must be at most 500 characters."
    assert 'value="abc"' in page and 'value="0"' in page and "<option selected>LTC</option>" in page
    await visitor.submit("/app/links", {"action": "create", "coin": "BTC", "amount_fiat": "5"}, expect=400)
    assert field_error(visitor.page, "fiat_currency") == "Required with fiat price."
    assert 'value="5"' in visitor.page
    await visitor.submit("/app/links", {"action": "create", "coin": "BTC", "amount_fiat": "5",
                                        "fiat_currency": "EUR", "lifetime": "15"})
    page = await visitor.get("/app/links")
    assert "5 EUR in BTC" in page and 'id="form-errors"' not in page


def options_of(page: str, select_id: str) -> list[str]:
    """The options of the select ``select_id``, in order (their text)."""
    found = re.search(rf'<select id="{select_id}"[^>]*>(.*?)</select>', page, re.S)
    assert found, f"no select #{select_id}"
    return re.findall(r"<option[^>]*>([^<]*)</option>", found.group(1))


async def test_link_schedule_and_auto_withdraw_pickers_offer_the_merchants_coins(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("pickers@example.com")
    response = await app_client.post("/dashboard/auth/login", json={"email": "pickers@example.com",
                                                                      "password": "correct horse battery"})
    jwt = {"Authorization": f"Bearer {(await response.json())['data']['token']}"}
    response = await app_client.put("/dashboard/settings/coins", headers=jwt, json={"accepted_coins": ["LTC", "BTC"]})
    assert response.status == 200, await response.text()
    # Before: every coin of the gateway (20), a link in a coin the API then refused.
    for path, select in (("/app/links", "link-coin"), ("/app/schedules", "schedule-coin"), (AUTOWITHDRAW, "aw-coin")):
        page = await visitor.get(path)
        assert options_of(page, select) == ["LTC", "BTC"], path  # the merchant's order: LTC is prefilled


async def test_the_shop_name_from_settings_shows_on_the_hosted_page(app_client):
    visitor = Visitor(app_client)
    keys = await visitor.sign_up("shopname@example.com")
    response = await app_client.post("/v1/payment/invoice", headers={"merchant_api_key": keys["merchant_api_key"]},
                                     json={"amount": "0.01", "currency": "BTC"})
    pay_path = "/pay/" + (await response.json())["data"]["track_id"]
    assert 'id="merchant-name"' not in await visitor.get(pay_path)  # no name yet, no brands plugin answer

    await visitor.get("/app/settings")
    await visitor.submit("/app/settings/profile", {"display_name": "n" * 81}, expect=400)
    assert field_error(visitor.page, "display_name") == "Must be at most 80 characters."
    assert f'value="{"n" * 81}"' in visitor.page  # the typed name kept
    await visitor.submit("/app/settings/profile", {"display_name": "  Corner Café & Co  "})
    assert 'value="Corner Café &amp; Co"' in await visitor.get("/app/settings")
    assert '<p class="merchant" id="merchant-name">Corner Café &amp; Co</p>' in await visitor.get(pay_path)

    await visitor.get("/app/settings")
    await visitor.submit("/app/settings/profile", {"display_name": ""})  # cleared: the page names no one
    assert 'id="merchant-name"' not in await visitor.get(pay_path)
