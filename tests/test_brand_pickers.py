"""A brand is chosen where a link, a plan and an API key are made (issue 49 item 3), on SQLite and PostgreSQL.

Each dashboard form offers the account's brands (``decide_brand_choices``, the payment form's hook), previews
each before anything is saved (an SVG of its page in the colours payers get), stores the chosen one, and
refuses another account's beside the picker. What is made wears it: the link's prompt and the invoices it
mints, the plan's customer page and the invoices it bills, the key's payments.
"""

from __future__ import annotations

import re

import pytest

from orbchain.core.types.contrast import readable_accent
from orbchain.web.keys import GATEWAY

from .brand_support import DARK_BLUE, OLD_RED, brand, field_error, picker, preview, shop
from .support import api


@pytest.fixture
async def app_client(make_client, make_config):
    return await make_client(make_config(scheduler={"enabled": False}))


async def test_every_form_offers_and_previews_the_brands_before_saving(app_client):
    visitor, jwt = await shop(app_client, "pickers@example.com")
    night = await brand(app_client, jwt, "Night", theme_mode="DARK", brand_color=DARK_BLUE)
    day = await brand(app_client, jwt, "Day")
    old = await brand(app_client, jwt, "Old red")
    from orbchain.plugins.brands import store
    gateway = app_client.app[GATEWAY]
    merchant_id = await gateway.db.fetch_val("SELECT merchant_id FROM brands WHERE id = :i", {"i": old})
    await store.update(gateway, merchant_id, old, {"brand_color": OLD_RED})  # saved before the AA check
    for path, select_id in (("/app/payments/new", "brand_id"), ("/app/keys", "key_brand"),
                            ("/app/links", "link-brand"), ("/app/subscriptions", "plan-brand")):
        page = await visitor.get(path)
        assert picker(page, select_id)[0] == "" and sorted(picker(page, select_id)[1:]) == sorted([night, day, old]), (path, re.search(r"<select id=.{0,3000}", page, re.S).group(0))  # the default look is untagged
        assert preview(page, night) == {"card": "#111827", "button": DARK_BLUE, "label": "#ffffff",
                                        "title": f"Night: dark page, buttons {DARK_BLUE} with #ffffff text"}, path
        assert preview(page, day) == {"card": "#ffffff", "button": "#111827", "label": "#ffffff",
                                      "title": "Day: light page, buttons #111827 with #ffffff text"}, path
        assert preview(page, old)["button"] == readable_accent(OLD_RED) != OLD_RED, path  # as its pages draw it
    assert " style=" not in page  # the previews are SVG attributes: the dashboard's CSP stays style-src 'self'


async def test_a_key_made_in_the_dashboard_wears_its_brand(app_client):
    visitor, jwt = await shop(app_client, "keys-brand@example.com")
    night = await brand(app_client, jwt, "Night", theme_mode="DARK", brand_color=DARK_BLUE)
    await visitor.get("/app/keys")
    await visitor.submit("/app/keys", {"label": "shop", "scopes": ["payment:create"], "brand_id": night}, expect=200)
    key = re.search(r'id="new-api-key"[^>]*>([^<]+)<', visitor.page).group(1)
    assert "brand: Night" in visitor.page
    status, body = await api(app_client, "POST", "/v1/payment/invoice", {"merchant_api_key": key},
                             json={"amount": "0.01", "currency": "BTC"})
    assert status == 200, body
    html = await (await app_client.get(f"/pay/{body['data']['track_id']}")).text()
    assert f"/assets/accent/{DARK_BLUE[1:]}.css" in html and 'class="theme-dark"' in html

    await visitor.submit("/app/logout")  # one cookie jar: the next account signs up signed out
    other, _ = await shop(app_client, "keys-other@example.com")
    await other.get("/app/keys")
    await other.submit("/app/keys", {"label": "forged", "scopes": ["payment:create"], "brand_id": night}, expect=400)
    assert "brand" in re.search(r"id=\"form-error\">([^<]*)<", other.page).group(1), other.page[-3000:]
    status, body = await api(app_client, "GET", "/dashboard/api-keys", jwt)
    assert [k["brand_id"] for k in body["data"]["keys"] if not k["is_legacy"]] == [night]


async def test_a_link_made_in_the_dashboard_wears_its_brand(app_client):
    visitor, jwt = await shop(app_client, "links-brand@example.com")
    night = await brand(app_client, jwt, "Night", theme_mode="DARK", brand_color=DARK_BLUE)
    await visitor.get("/app/links")
    await visitor.submit("/app/links", {"action": "create", "coin": "BTC", "brand_id": night})
    status, body = await api(app_client, "GET", "/dashboard/payment-links", jwt)
    link = body["data"]["links"][0]
    assert link["brand_id"] == night
    assert "Brand: Night" in await visitor.get("/app/links")
    prompt = await app_client.get(f"/l/{link['slug']}")
    html = await prompt.text()
    assert prompt.status == 200 and f"/assets/accent/{DARK_BLUE[1:]}.css" in html and "Night" in html
    minted = await app_client.get(f"/l/{link['slug']}?amount=0.001", allow_redirects=False)
    assert minted.status == 302, await minted.text()
    track_id = minted.headers["Location"].rsplit("/", 1)[-1]
    gateway = app_client.app[GATEWAY]
    assert await gateway.db.fetch_val("SELECT brand_id FROM payments WHERE track_id = :t", {"t": track_id}) == night

    await visitor.submit("/app/logout")  # one cookie jar: the next account signs up signed out
    other, other_jwt = await shop(app_client, "links-other@example.com")
    await other.get("/app/links")
    await other.submit("/app/links", {"action": "create", "coin": "BTC", "brand_id": night}, expect=400)
    assert field_error(other.page, "brand_id") == "Not a brand of this account."
    status, body = await api(app_client, "POST", "/dashboard/payment-links", other_jwt,
                             json={"coin": "BTC", "brand_id": night})
    assert status == 400 and body["error"]["detail"] == {"brand_id": "is not a brand of this account"}
    assert (await api(app_client, "GET", "/dashboard/payment-links", other_jwt))[1]["data"]["links"] == []


async def test_a_plan_made_in_the_dashboard_wears_its_brand(app_client):
    visitor, jwt = await shop(app_client, "plans-brand@example.com")
    night = await brand(app_client, jwt, "Night", theme_mode="DARK", brand_color=DARK_BLUE)
    await visitor.get("/app/subscriptions")
    await visitor.submit("/app/subscriptions", {"action": "create", "label": "Club", "amount_usd": "5",
                                                "interval_days": "30", "brand_id": night})
    status, body = await api(app_client, "GET", "/dashboard/plans", jwt)
    plan = body["data"]["plans"][0] if isinstance(body["data"], dict) else body["data"][0]
    assert plan["brand_id"] == night
    assert "Brand: Night" in await visitor.get("/app/subscriptions")
    page = await app_client.get(f"/subscribe/{plan['id']}")
    html = await page.text()
    assert page.status == 200 and f"/assets/accent/{DARK_BLUE[1:]}.css" in html and 'class="theme-dark"' in html

    await visitor.submit("/app/logout")  # one cookie jar: the next account signs up signed out
    other, other_jwt = await shop(app_client, "plans-other@example.com")
    await other.get("/app/subscriptions")
    await other.submit("/app/subscriptions", {"action": "create", "label": "Club", "amount_usd": "5",
                                              "interval_days": "30", "brand_id": night}, expect=400)
    assert field_error(other.page, "brand_id") == "Not a brand of this account."
    status, body = await api(app_client, "POST", "/dashboard/plans", other_jwt, json={
        "label": "Club", "amount_usd": "5", "interval_sec": 30 * 86400, "brand_id": night})
    assert status == 400 and body["error"]["detail"] == {"brand_id": "is not a brand of this account"}
