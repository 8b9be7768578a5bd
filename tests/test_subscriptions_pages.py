"""The customer's subscription pages (SPEC 4.14, 8) over HTTP, on both databases.

Forms are posted as a browser without JavaScript posts them
(``application/x-www-form-urlencoded``) and redirects are checked, not followed.
An enrolment from the page is PENDING until its first invoice is paid (issue 29), and until then it is not a
subscription: the API and the subscription webhooks show none (issue 42 item 9).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from urllib.parse import urlsplit

import pytest

from orbchain.core.payments.status import expire_payments
from orbchain.plugins.subscriptions import billing, enrolment, store
from orbchain.plugins.subscriptions.billing import run_billing
from orbchain.web.keys import GATEWAY

from .dashboard_support import Visitor
from .support import Devnet, advance_clock, api, freeze_clock, signup

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


async def enrolments(client, merchant):
    """Every row the plugin keeps for the merchant, subscriptions and unpaid enrolments alike, newest first, as the
    views show one (the manage page and the dashboard see enrolments the API does not list)."""
    gateway = client.app[GATEWAY]
    rows = await gateway.db.fetch_all("SELECT id FROM subscriptions WHERE merchant_id = :m"
                                      " ORDER BY created_at DESC, id DESC", {"m": merchant.merchant_id})
    return [enrolment.subscription_view(gateway, await store.subscription_row(gateway, r["id"])) for r in rows]


async def enrol(client, plan_id, headers=None, **form):
    """Post the form as a browser; the hosted page of the first invoice it is sent to (``/pay/<track_id>``)."""
    response = await client.post(f"/subscribe/{plan_id}", data=form, headers=headers, allow_redirects=False)
    assert response.status == 303, await response.text()
    location = response.headers["Location"]
    assert re.fullmatch(r"https?://[^/]+/pay/[A-Za-z0-9]{1,64}", location), location
    return location


def manage_path(sub):
    return "/subscribe/manage/" + sub["manage_url"].rsplit("/", 1)[1]


async def pay_first_invoice(client, merchant, pay_url):
    """Pay the invoice at ``pay_url`` on the devnet, exactly, and confirm it."""
    status, body = await api(client, "GET", f"/v1/payment/{pay_url.rsplit('/', 1)[1]}", merchant.merchant_key)
    assert status == 200, body
    devnet = Devnet(client)
    await devnet.pay(body["data"]["pay_currency"], body["data"]["address"], body["data"]["pay_amount"])
    await devnet.mine(devnet.gateway.coins.require(body["data"]["pay_currency"]).confirmations)
    return body["data"]


async def active_enrolment(client, merchant, plan, **form):
    """An enrolment from the page whose first invoice is paid: the subscription, ACTIVE."""
    await pay_first_invoice(client, merchant, await enrol(client, plan["id"], **form))
    [sub] = [s for s in await subscriptions(client, merchant) if s["status"] == "ACTIVE"]
    return sub


async def outbox(gateway, prefix):
    rows = await gateway.db.fetch_all("SELECT event_type, body FROM webhook_events ORDER BY created_at, event_id")
    return [(r["event_type"], json.loads(r["body"])) for r in rows if r["event_type"].startswith(prefix)]


async def test_the_form_enrols_pending_and_sends_the_customer_to_the_first_invoice(shop):
    """Issue 29 item 5 and issue 32 item 5. Breaks caught: the page made an ACTIVE subscription with no
    invoice (the tick minted one up to 5 minutes later, and another after it expired, with a webhook
    each) and sent the customer to a manage page showing ACTIVE."""
    client, merchant, plan = shop
    gateway = client.app[GATEWAY]
    page = await client.get(f"/subscribe/{plan['id']}")
    html = await page.text()
    assert page.status == 200 and page.content_type == "text/html"
    assert "Coffee &lt;club&gt;" in html and "4.99" in html and "30 days" in html and "<script" not in html
    assert f'action="/subscribe/{plan["id"]}"' in html and "default-src 'none'" in page.headers[
        "Content-Security-Policy"]
    pay_url = await enrol(client, plan["id"], email="Buyer@Example.com", customer_ref="order-7")
    [sub] = await enrolments(client, merchant)
    assert sub["status"] == "PENDING" and sub["customer_email"] == "buyer@example.com"
    # Issue 42 item 9, break caught: the API listed it PENDING, outside SPEC 3.4's four statuses.
    assert await subscriptions(client, merchant) == []
    status, body = await api(client, "GET", f"/v1/subscription/{sub['subscription_id']}", merchant.merchant_key)
    assert status == 404, body
    status, body = await api(client, "GET", "/v1/subscription", merchant.merchant_key, params={"status": "PENDING"})
    assert status == 400 and body["error"]["detail"]["status"], body
    assert sub["customer_ref"] == "order-7" and sub["pay_url"] == pay_url
    status, body = await api(client, "GET", f"/v1/payment/{pay_url.rsplit('/', 1)[1]}", merchant.merchant_key)
    invoice = body["data"]
    assert invoice["status"] == "Waiting" and invoice["amount_fiat"] == "4.99" and invoice["fiat_currency"] == "USD"
    assert invoice["accepted_coins"] == ["BTC", "LTC"] and invoice["return_url"] == sub["manage_url"]
    assert await outbox(gateway, "subscription.") == []  # an unpaid sign-up costs the merchant no webhook
    assert (await run_billing(gateway)).minted == 0  # the tick bills only ACTIVE subscriptions
    manage = await (await client.get(manage_path(sub))).text()
    assert 'id="status">Pending<' in manage and 'id="pending-message"' in manage and pay_url in manage
    assert "/pause" not in manage and "/cancel" in manage

    await pay_first_invoice(client, merchant, pay_url)
    [sub] = await subscriptions(client, merchant)
    assert sub["status"] == "ACTIVE" and sub["pay_url"] is None
    assert sub["current_period_end"] - sub["current_period_start"] == MONTH
    assert [kind for kind, _ in await outbox(gateway, "subscription.")] == ["subscription.paid"]
    paid_page = await (await client.get(urlsplit(pay_url).path)).text()
    assert sub["manage_url"] in paid_page  # "Return to merchant" leads to the manage page once Paid
    manage = await (await client.get(manage_path(sub))).text()
    assert 'id="status">Active<' in manage and 'id="period-end"' in manage


async def test_an_unpaid_enrolment_expires_with_its_invoice_and_never_bills(shop):
    client, merchant, plan = shop
    gateway = client.app[GATEWAY]
    start = freeze_clock(gateway)
    await enrol(client, plan["id"])
    advance_clock(gateway, billing.DEFAULT_LIFETIME_MINUTES * 60 + 1)
    await expire_payments(gateway)
    [sub] = await enrolments(client, merchant)
    assert sub["status"] == "EXPIRED" and sub["next_billing_at"] is None and sub["pay_url"] is None
    assert await subscriptions(client, merchant) == []  # it never was a subscription
    for days in (1, 31, 62):  # months later the tick still mints nothing for it
        gateway.clock = lambda d=days: start + d * 86400
        report = await run_billing(gateway)
        assert report.minted == 0, report
    assert len((await api(client, "GET", "/v1/payment", merchant.merchant_key))[1]["data"]["payments"]) == 1
    assert await outbox(gateway, "subscription.") == []  # no invoiced, no failed: it never was a customer
    manage = await (await client.get(manage_path(sub))).text()
    assert 'id="status">Expired<' in manage and 'id="expired-message"' in manage and "/cancel" not in manage
    refused = await client.post(f"{manage_path(sub)}/cancel", allow_redirects=False)
    assert refused.status == 400
    summary = await enrolment.summary(gateway, merchant.merchant_id)  # (the dashboard JWT has expired by now)
    assert summary["expired"] == 1 and summary["pending"] == 0 and summary["mrr_usd"] == "0.00"


async def test_an_unpaid_enrolment_is_never_a_subscription_of_the_api_or_its_webhooks(shop):
    """Issue 42 item 9: SPEC 3.4 has four statuses. A page enrolment stays out of GET /v1/subscription (and its
    id, its cancel, GET /dashboard/subscriptions, the subscription webhooks) until its first invoice is paid; one
    the customer cancels before paying never joins, even when that invoice is paid afterwards (the merchant is
    credited, payment.paid fires, subscription.paid does not). The dashboard page lists waiting ones apart."""
    client, merchant, plan = shop
    gateway = client.app[GATEWAY]
    waiting_url = await enrol(client, plan["id"], customer_ref="waiting")
    cancelled_url = await enrol(client, plan["id"], customer_ref="gave-up")
    waiting, cancelled = sorted(await enrolments(client, merchant), key=lambda s: s["customer_ref"] != "waiting")
    response = await client.post(f"{manage_path(cancelled)}/cancel", allow_redirects=False)
    assert response.status == 303
    subscribed = await active_enrolment(client, merchant, plan, customer_ref="paid")
    await pay_first_invoice(client, merchant, cancelled_url)  # paid after the customer cancelled
    for row in await enrolments(client, merchant):
        assert row["status"] in ("PENDING", "CANCELLED", "ACTIVE"), row
    for headers, path in ((merchant.merchant_key, "/v1/subscription"), (merchant.jwt, "/dashboard/subscriptions")):
        status, body = await api(client, "GET", path, headers)
        assert status == 200, body
        listed = body["data"]["subscriptions"]
        assert [s["subscription_id"] for s in listed] == [subscribed["subscription_id"]] and body["data"]["total"] == 1
        assert {s["status"] for s in listed} <= {"ACTIVE", "PAUSED", "CANCELLED", "FAILED"}
    for unpaid in (waiting, cancelled):
        for method, suffix in (("GET", ""), ("POST", "/cancel")):
            status, _ = await api(client, method, f"/v1/subscription/{unpaid['subscription_id']}{suffix}",
                                  merchant.merchant_key)
            assert status == 404, (unpaid["customer_ref"], method)
    status, body = await api(client, "GET", "/v1/subscription", merchant.merchant_key, params={"status": "CANCELLED"})
    assert status == 200 and body["data"]["subscriptions"] == []
    events = await outbox(gateway, "subscription.")
    assert [(kind, body["subscription_id"]) for kind, body in events] == [
        ("subscription.paid", subscribed["subscription_id"])]
    paid = await gateway.db.fetch_all("SELECT body FROM webhook_events WHERE event_type = 'payment.paid'")
    assert cancelled_url.rsplit("/", 1)[1] in " ".join(r["body"] for r in paid)  # the money itself is announced
    summary = await enrolment.summary(gateway, merchant.merchant_id)
    assert (summary["active"], summary["cancelled"], summary["pending"]) == (1, 0, 1), summary
    status, body = await api(client, "GET", "/dashboard/subscriptions/summary", merchant.jwt)
    assert status == 200 and body["data"] == summary
    # The merchant still sees the waiting sign-up, as an enrolment, with its invoice.
    browser = Visitor(client)
    await browser.sign_in("merchant@example.com", "s3cret-pass")
    html = await browser.get("/app/subscriptions")
    waiting_rows = html.split('id="pending-table"', 1)[1].split("</table>", 1)[0]
    assert "waiting" in waiting_rows and waiting_url in waiting_rows and "gave-up" not in waiting_rows
    listed_rows = html.split('id="subscriptions-table"', 1)[1].split("</table>", 1)[0]
    assert "paid" in listed_rows and "waiting" not in listed_rows and "gave-up" not in listed_rows


async def test_unpaid_enrolments_per_ip_and_plan_are_capped(make_client, make_config):
    """Issue 29 item 5, break caught: one IP could enrol without bound (86,000 a day at default limits)."""
    client = await make_client(make_config(scheduler={"enabled": False}, server={"trust_forwarded_for": True},
                                           plugin={"subscriptions": {"pending_per_ip": 2}}))
    merchant = await signup(client)
    plans = [(await api(client, "POST", "/dashboard/plans", merchant.jwt, json={
        "label": label, "amount_usd": "5", "interval_sec": MONTH, "accepted_coins": ["BTC"]}))[1]["data"]
        for label in ("A", "B")]
    gateway = client.app[GATEWAY]
    now = freeze_clock(gateway)
    here, elsewhere = {"X-Forwarded-For": "203.0.113.7"}, {"X-Forwarded-For": "198.51.100.9"}
    first = await enrol(client, plans[0]["id"], headers=here, customer_ref="1")
    await enrol(client, plans[0]["id"], headers=here, customer_ref="2")
    refused = await client.post(f"/subscribe/{plans[0]['id']}", data={"customer_ref": "3"}, headers=here,
                                allow_redirects=False)
    page = await refused.text()
    assert refused.status == 429 and refused.content_type == "text/html" and 'id="pending-cap"' in page
    assert int(refused.headers["Retry-After"]) == billing.DEFAULT_LIFETIME_MINUTES * 60  # the oldest lapses then
    await enrol(client, plans[1]["id"], headers=here)  # per plan
    await enrol(client, plans[0]["id"], headers=elsewhere)  # per IP
    assert len(await enrolments(client, merchant)) == 4
    await pay_first_invoice(client, merchant, first)  # a paid one is no longer pending: a slot is free
    await enrol(client, plans[0]["id"], headers=here, customer_ref="3")
    assert gateway.now() == now


async def test_parallel_enrolments_from_one_ip_stop_at_the_cap(make_client, make_config):
    """The plan row is locked while the pending ones are counted: 10 racing posts create exactly 3."""
    client = await make_client(make_config(scheduler={"enabled": False}))
    merchant = await signup(client)
    plan = (await api(client, "POST", "/dashboard/plans", merchant.jwt, json={
        "label": "A", "amount_usd": "5", "interval_sec": MONTH, "accepted_coins": ["BTC"]}))[1]["data"]
    responses = await asyncio.gather(*(client.post(f"/subscribe/{plan['id']}", data={"customer_ref": str(n)},
                                                   allow_redirects=False) for n in range(10)))
    assert sorted(r.status for r in responses) == [303] * 3 + [429] * 7
    assert [s["status"] for s in await enrolments(client, merchant)] == ["PENDING"] * 3


async def test_a_retried_enrolment_goes_to_the_same_invoice(shop):
    """Issue 32 item 5: a double click, a reload or the back button re-posts the form; while its invoice can be
    paid, the same visitor with the same fields is sent to the same invoice, not a second one."""
    client, merchant, plan = shop
    gateway = client.app[GATEWAY]
    freeze_clock(gateway)
    form = {"email": "a@example.com", "customer_ref": "r1"}
    first = await enrol(client, plan["id"], **form)
    assert await enrol(client, plan["id"], **form) == first
    racing = await asyncio.gather(*(enrol(client, plan["id"], **form) for _ in range(3)))
    assert set(racing) == {first} and len(await enrolments(client, merchant)) == 1
    other = await enrol(client, plan["id"], email="a@example.com")  # different fields: another enrolment
    assert other != first and len(await enrolments(client, merchant)) == 2
    advance_clock(gateway, billing.DEFAULT_LIFETIME_MINUTES * 60)  # the first invoice can no longer be paid
    assert await enrol(client, plan["id"], **form) not in (first, other)
    assert len(await enrolments(client, merchant)) == 3


async def test_both_fields_are_optional_and_bad_ones_redisplay_the_form(shop):
    client, merchant, plan = shop
    await enrol(client, plan["id"])
    bad = await client.post(f"/subscribe/{plan['id']}", data={"email": "nope", "customer_ref": "x" * 129},
                            allow_redirects=False)
    html = await bad.text()
    assert bad.status == 400 and bad.content_type == "text/html"
    assert 'id="form-error"' in html and "email" in html and "customer_ref" in html and 'value="nope"' in html
    assert len(await enrolments(client, merchant)) == 1  # nothing created by the bad post


async def test_a_disabled_or_unknown_plan_shows_a_clear_page(shop):
    client, merchant, plan = shop
    await api(client, "PATCH", f"/dashboard/plans/{plan['id']}", merchant.jwt, json={"enabled": False})
    for plan_id in (plan["id"], "plan_unknown", "x" * 300):
        for method in ("GET", "POST"):
            response = await client.request(method, f"/subscribe/{plan_id}", data={}, allow_redirects=False)
            html = await response.text()
            assert response.status == 404 and response.content_type == "text/html", (method, plan_id)
            assert "Plan not available" in html and "no longer offered" in html
    assert await enrolments(client, merchant) == []


async def test_pause_resume_cancel_and_the_rotated_link(shop):
    client, merchant, plan = shop
    gateway = client.app[GATEWAY]
    location = manage_path(await active_enrolment(client, merchant, plan))
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
    assert 'id="status">Cancelled<' in html and 'id="cancelled-message"' in html and "/pause" not in html
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
    start = freeze_clock(gateway)
    sub = await active_enrolment(client, merchant, plan, email="b@example.com")
    gateway.clock = lambda: start + MONTH
    assert (await run_billing(gateway)).minted == 1
    [sub] = await subscriptions(client, merchant)
    html = await (await client.get(manage_path(sub))).text()
    assert 'id="pay-link"' in html and sub["pay_url"] in html
    assert 'id="history"' in html and "4.99 USD" in html and "open" in html and "paid" in html
    # Cancelling is the destructive choice: outlined in red, not the filled primary button that Pause is.
    assert '<button type="submit" id="cancel" class="danger">' in html and '<button type="submit" id="pause">' in html
    css = await (await client.get("/assets/orbchain.css")).text()
    assert re.search(r"button\.danger \{ background: #fff; color: #b91c1c;", css)


async def test_pages_are_limited_per_ip(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits={"public_page_per_minute": 3}))
    client.app[GATEWAY].clock = lambda: 1_800_000_001.0  # every request inside one window
    for _ in range(3):
        assert (await client.get("/subscribe/plan_x")).status == 404
    limited = await client.get("/subscribe/manage/" + "a" * 43)
    assert limited.status == 429 and limited.content_type == "text/html"
    assert int(limited.headers["Retry-After"]) > 0
