"""The customer's subscription pages (SPEC 4.14, 8) over HTTP, on both databases.

Forms are posted as a browser without JavaScript posts them
(``application/x-www-form-urlencoded``) and redirects are checked, not followed.
"""

from __future__ import annotations

import hashlib
import re

import pytest

from orbchain.plugins.subscriptions.billing import run_billing
from orbchain.web.keys import GATEWAY

from .support import api, signup

MONTH = 30 * 86400


@pytest.fixture
async def shop(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    merchant = await signup(client)
    status, body = await api(client, "POST", "/dashboard/plans", merchant.jwt, json={
        "label": "Coffee <club>", "amount_usd": "4.99", "interval_sec": MONTH, "accepted_coins": ["BTC", "LTC"]})
    assert status == 200, body
    return client, merchant, body["data"]


async def subscriptions(client, merchant):
    return (await api(client, "GET", "/v1/subscription", merchant.merchant_key))[1]["data"]["subscriptions"]


async def enrol(client, plan_id, **form):
    response = await client.post(f"/subscribe/{plan_id}", data=form, allow_redirects=False)
    assert response.status == 303, await response.text()
    location = response.headers["Location"]
    assert re.fullmatch(r"/subscribe/manage/[A-Za-z0-9_-]{43}", location), location
    return location


async def test_the_form_enrols_and_redirects_to_the_manage_page(shop):
    client, merchant, plan = shop
    page = await client.get(f"/subscribe/{plan['id']}")
    html = await page.text()
    assert page.status == 200 and page.content_type == "text/html"
    assert "Coffee &lt;club&gt;" in html and "4.99" in html and "30 days" in html and "<script" not in html
    assert f'action="/subscribe/{plan["id"]}"' in html and "default-src 'none'" in page.headers[
        "Content-Security-Policy"]
    location = await enrol(client, plan["id"], email="Buyer@Example.com", customer_ref="order-7")
    [sub] = await subscriptions(client, merchant)
    assert sub["status"] == "ACTIVE" and sub["customer_email"] == "buyer@example.com"
    assert sub["customer_ref"] == "order-7" and sub["manage_url"].endswith(location)
    manage = await client.get(location)
    html = await manage.text()
    assert manage.status == 200 and 'id="status">ACTIVE<' in html and 'id="next-billing"' in html
    assert 'action="' + location + '/pause"' in html and 'action="' + location + '/cancel"' in html


async def test_both_fields_are_optional_and_bad_ones_redisplay_the_form(shop):
    client, merchant, plan = shop
    await enrol(client, plan["id"])
    bad = await client.post(f"/subscribe/{plan['id']}", data={"email": "nope", "customer_ref": "x" * 129},
                            allow_redirects=False)
    html = await bad.text()
    assert bad.status == 400 and bad.content_type == "text/html"
    assert 'id="form-error"' in html and "email" in html and "customer_ref" in html and 'value="nope"' in html
    assert len(await subscriptions(client, merchant)) == 1  # nothing created by the bad post


async def test_a_disabled_or_unknown_plan_shows_a_clear_page(shop):
    client, merchant, plan = shop
    await api(client, "PATCH", f"/dashboard/plans/{plan['id']}", merchant.jwt, json={"enabled": False})
    for plan_id in (plan["id"], "plan_unknown", "x" * 300):
        for method in ("GET", "POST"):
            response = await client.request(method, f"/subscribe/{plan_id}", data={}, allow_redirects=False)
            html = await response.text()
            assert response.status == 404 and response.content_type == "text/html", (method, plan_id)
            assert "Plan not available" in html and "no longer offered" in html
    assert await subscriptions(client, merchant) == []


async def test_pause_resume_cancel_and_the_rotated_link(shop):
    client, merchant, plan = shop
    gateway = client.app[GATEWAY]
    location = await enrol(client, plan["id"])
    for action, status in (("pause", "PAUSED"), ("pause", "PAUSED"), ("resume", "ACTIVE")):
        response = await client.post(f"{location}/{action}", allow_redirects=False)
        assert response.status == 303 and response.headers["Location"] == location
        assert (await subscriptions(client, merchant))[0]["status"] == status
    response = await client.post(f"{location}/cancel", allow_redirects=False)
    assert response.status == 303
    fresh = response.headers["Location"]
    assert fresh != location and fresh.startswith("/subscribe/manage/")
    old = await client.get(location)
    assert old.status == 404 and "Link not valid" in await old.text()
    assert (await client.post(f"{location}/resume", allow_redirects=False)).status == 404
    html = await (await client.get(fresh)).text()
    assert 'id="status">CANCELLED<' in html and 'id="cancelled-message"' in html and "/pause" not in html
    refused = await client.post(f"{fresh}/resume", allow_redirects=False)
    assert refused.status == 400 and refused.content_type == "text/html"
    [sub] = await subscriptions(client, merchant)
    assert sub["status"] == "CANCELLED" and sub["manage_url"].endswith(fresh)
    # Stored: the token for the link and its digest for the look-up, the old one gone.
    row = await gateway.db.fetch_one("SELECT magic_token, token_hash FROM subscriptions")
    assert row["token_hash"] == hashlib.sha256(row["magic_token"].encode()).hexdigest()
    assert row["magic_token"] == fresh.rsplit("/", 1)[1]


@pytest.mark.parametrize("token", ["", "short", "x" * 43, "A" * 200, "%C3%A9" * 20])
async def test_guessed_tokens_are_404(shop, token):
    client, _, plan = shop
    await enrol(client, plan["id"])
    response = await client.get(f"/subscribe/manage/{token}")
    assert response.status == 404
    assert (await client.post(f"/subscribe/manage/{token}/cancel", allow_redirects=False)).status == 404


async def test_the_manage_page_shows_the_open_invoice_and_history(shop):
    client, merchant, plan = shop
    gateway = client.app[GATEWAY]
    location = await enrol(client, plan["id"], email="b@example.com")
    await run_billing(gateway)
    [sub] = await subscriptions(client, merchant)
    html = await (await client.get(location)).text()
    assert 'id="pay-link"' in html and sub["pay_url"] in html
    assert 'id="history"' in html and "4.99 USD" in html and "open" in html


async def test_pages_are_limited_per_ip(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits={"public_page_per_minute": 3}))
    client.app[GATEWAY].clock = lambda: 1_800_000_001.0  # every request inside one window
    for _ in range(3):
        assert (await client.get("/subscribe/plan_x")).status == 404
    limited = await client.get("/subscribe/manage/" + "a" * 43)
    assert limited.status == 429 and limited.content_type == "text/html"
    assert int(limited.headers["Retry-After"]) > 0
