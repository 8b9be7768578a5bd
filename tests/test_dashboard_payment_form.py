"""The new-payment form (issue 49 item 8), over HTTP as a browser without JavaScript, on SQLite and PostgreSQL.

Amount and currency first (coins and fiat in their own ``<optgroup>``, the account's default currency from
Settings, Payments preselected), the rest under "More options" (a ``<details>``, open when one of its fields is
filled in or refused), and a brand picker when the account has brands: the chosen brand tags the payment.
"""

from __future__ import annotations

import re

import pytest

from orbchain.web.keys import GATEWAY

from .dashboard_support import Visitor
from .support import api

NEW = "/app/payments/new"


@pytest.fixture
async def app_client(make_client, make_config):
    return await make_client(make_config(scheduler={"enabled": False}))


def selected(page: str, select_id: str) -> list[str]:
    select = re.search(rf'<select id="{select_id}".*?</select>', page, re.S).group(0)
    return re.findall(r'<option value="([^"]*)" selected', select)


def field_error(page: str, name: str) -> str:
    assert re.search(rf'name="{name}"[^>]*aria-invalid="true" aria-describedby="error-{name}"', page), name
    return re.search(rf'<p class="field-error" id="error-{name}">([^<]*)</p>', page).group(1)


async def signed_up(client, email: str) -> Visitor:
    visitor = Visitor(client)
    await visitor.sign_up(email)
    await visitor.get("/app/settings")
    await visitor.submit("/app/settings/coins", {"accepted_coins": ["BTC", "LTC"]})
    return visitor


async def test_amount_and_currency_come_first_and_the_rest_is_folded_under_more_options(app_client):
    visitor = await signed_up(app_client, "first@example.com")
    page = await visitor.get(NEW)
    form = page[page.index('<form method="post" action="/app/payments/new"'):]
    folded = form[form.index('<details class="more" id="more-options">'):form.index("</details>")]
    visible = form[:form.index('<details class="more"')]
    assert 'name="amount"' in visible and 'name="currency"' in visible
    for name in ("type", "pay_currency", "order_id", "description", "lifetime", "email", "return_url",
                 "callback_url"):
        assert f'name="{name}"' in folded and f'name="{name}"' not in visible, name
    assert re.search(r'<optgroup label="Coins you accept">.*?BTC.*?LTC.*?</optgroup>', form, re.S)
    assert re.search(r'<optgroup label="Fiat \(invoices only\)">.*?USD.*?EUR.*?</optgroup>', form, re.S)
    assert selected(page, "currency") == ["BTC"]  # no default chosen: the first accepted coin, as the API
    assert 'name="brand_id"' not in page  # no brands: no picker

    # A refused field under More options opens it, with the error beside the field and the input kept.
    await visitor.submit(NEW, {"amount": "1", "currency": "BTC", "type": "invoice", "lifetime": "9" * 30},
                         expect=400)
    assert '<details class="more" id="more-options" open>' in visitor.page
    assert field_error(visitor.page, "lifetime")
    assert await app_client.app[GATEWAY].db.fetch_val("SELECT COUNT(*) FROM payments") == 0


async def test_the_accounts_default_currency_is_preselected_and_a_forged_one_is_refused(app_client):
    gateway = app_client.app[GATEWAY]
    visitor = await signed_up(app_client, "default@example.com")
    await visitor.get("/app/settings")
    await visitor.submit("/app/settings/default-currency", {"default_currency": "EUR"})
    assert selected(await visitor.get(NEW), "currency") == ["EUR"]
    assert ">EUR (default)</option>" in visitor.page
    response = await visitor.submit(NEW, {"amount": "12.50", "currency": "EUR", "type": "invoice"})
    track_id = response.headers["Location"].split("/")[-1].split("?")[0]
    assert await gateway.db.fetch_val("SELECT fiat_currency FROM payments WHERE track_id = :t",
                                      {"t": track_id}) == "EUR"

    await visitor.get("/app/settings")
    for forged in ("DOGE", "<b>", "x" * 500):
        await visitor.submit("/app/settings/default-currency", {"default_currency": forged}, expect=400)
        assert field_error(visitor.page, "default_currency").startswith("Choose one of your accepted coins")
    assert selected(await visitor.get(NEW), "currency") == ["EUR"]  # unchanged

    # A default that stops being offered (LTC no longer accepted) falls back to the first accepted coin.
    await visitor.get("/app/settings")
    await visitor.submit("/app/settings/default-currency", {"default_currency": "LTC"})
    assert selected(await visitor.get(NEW), "currency") == ["LTC"]
    await visitor.get("/app/settings")
    await visitor.submit("/app/settings/coins", {"accepted_coins": ["BTC"]})
    assert selected(await visitor.get(NEW), "currency") == ["BTC"]
    # Emptied: back to the API's default.
    await visitor.get("/app/settings")
    await visitor.submit("/app/settings/default-currency", {"default_currency": ""})
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM dashboard_payment_defaults") == 0


async def test_a_brand_is_chosen_under_more_options_and_tags_the_payment(app_client):
    gateway = app_client.app[GATEWAY]
    visitor = await signed_up(app_client, "brand@example.com")
    status, body = await api(app_client, "POST", "/dashboard/auth/login", {},
                             json={"email": "brand@example.com", "password": "correct horse battery"})
    jwt = {"Authorization": f"Bearer {body['data']['token']}"}
    status, body = await api(app_client, "POST", "/dashboard/brands", jwt, json={"name": "Night Shop"})
    assert status in (200, 201), body
    brand_id = body["data"]["id"]
    page = await visitor.get(NEW)
    assert re.search(rf'<option value="{brand_id}">Night Shop</option>', page)
    assert re.findall(r'<option value="([^"]*)"', re.search(r'<select id="brand_id".*?</select>', page, re.S)
                      .group(0)) == ["", brand_id]  # the default brand is "Your default look", untagged
    response = await visitor.submit(NEW, {"amount": "0.01", "currency": "BTC", "type": "invoice",
                                          "brand_id": brand_id})
    track_id = response.headers["Location"].split("/")[-1].split("?")[0]
    assert await gateway.db.fetch_val("SELECT brand_id FROM payments WHERE track_id = :t", {"t": track_id}) == brand_id

    # Another account's brand, or no brand at all, is refused beside the picker and nothing is made.
    await visitor.submit("/app/logout")
    other = await signed_up(app_client, "other@example.com")
    await other.get(NEW)
    for forged in (brand_id, "brand_nope"):
        await other.submit(NEW, {"amount": "0.01", "currency": "BTC", "type": "invoice", "brand_id": forged},
                           expect=400)
        assert field_error(other.page, "brand_id") == "Choose one of your brands from the list."
        assert '<details class="more" id="more-options" open>' in other.page
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM payments") == 1
