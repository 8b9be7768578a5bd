"""The payment detail page as a shop reads it (issue 49 item 7), over HTTP as a browser without JavaScript.

Amount, fee and net; the locked rate as money; the transactions linked to the
block explorer the operator configured (and never a hostile id); a timeline
of what happened, each webhook with its attempts and "Send again"; the
receipt as a summary with a verify explanation that really verifies, the
raw document behind a disclosure. On both databases (``app_client`` runs on
each). The browser half (phone layout, axe) is tests/test_dashboard_payment_detail_browser.py.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import re
from decimal import Decimal

import pytest
from nacl.signing import VerifyKey

from orbchain.core.events.webhooks import RESEND_GAP_SECONDS, deliver_due
from orbchain.core.infra.ratelimit import MemoryRateLimiter
from orbchain.plugins.dashboard.webhook_resend import RESENDS_PER_MINUTE
from orbchain.web.keys import GATEWAY

from .dashboard_support import Visitor, paid_invoice
from .support import WebhookReceiver, api
from .teams_support import invite, join

ATTEMPT = re.compile(r'<li class="attempt">.*?attempt (\d+): ([^<\n]+)', re.S)


def timeline_titles(page: str) -> list[str]:
    return re.findall(r'<p class="timeline-head"><time[^>]*>[^<]*</time> <strong>([^<]+)</strong>', page)


def webhook_entry(page: str, event_id: str) -> str:
    found = re.search(rf'<li class="timeline-webhook" id="webhook-{event_id}">(.*?)\n  </li>', page, re.S)
    assert found, page[-3000:]
    return found.group(1)


def event_id_of(page: str, event_type: str) -> str:
    found = re.search(r'id="webhook-(\w+)">\s*<p class="timeline-head"><time[^>]*>[^<]*</time> <strong>Webhook '
                      + re.escape(event_type) + "</strong>", page)
    assert found, page[-3000:]
    return found.group(1)


@pytest.fixture
async def app_client(make_client, make_config):
    # One attempt per round: a refused webhook gives up at once, so "Send again" is offered without waiting.
    return await make_client(make_config(scheduler={"enabled": False}, webhooks={"max_attempts": 1},
                                         plugin={"dashboard": {"explorer_urls": {
                                             "BTC": "https://explorer.example/tx/{txid}?net=main"}}}))


async def test_a_paid_payment_reads_amount_fee_net_timeline_and_a_verifiable_receipt(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("detail@example.com")
    track_id = await paid_invoice(app_client, visitor, amount="0.01")
    page = await visitor.get(f"/app/payments/{track_id}")

    # Amount, fee (the default 1 %, taken as the deposit was credited) and net, as the ledger booked them.
    assert re.search(r'id="amount">0\.01 BTC<', page)
    assert re.search(r'id="received">0\.01 BTC<', page)
    assert re.search(r'id="fee">0\.0001 BTC<', page)
    assert re.search(r'id="net"><strong>0\.0099 BTC<', page)
    # The transaction links to the configured explorer, with the id as the chain gave it.
    txid = (await app_client.app[GATEWAY].db.fetch_one("SELECT tx_hash FROM deposits WHERE track_id = :t",
                                                      {"t": track_id}))["tx_hash"]
    assert f'href="https://explorer.example/tx/{txid}?net=main"' in html.unescape(page)

    # The timeline, oldest first: created, seen, credited (with its fee), paid, then the webhooks.
    titles = timeline_titles(page)
    steps = [t for t in titles if not t.startswith("Webhook ")]
    assert steps == ["Payment created", "Deposit seen", "Deposit credited", "Paid"], titles
    # Each webhook where it was made: "paying" once the deposit was seen, "paid" once it was.
    assert titles.index("Deposit seen") < titles.index("Webhook payment.paying") < titles.index("Webhook payment.paid")
    assert titles.index("Paid") < titles.index("Webhook payment.paid") and "Webhook deposit.credited" in titles
    assert "fee 0.0001, net 0.0099 BTC" in page
    paid_event = event_id_of(page, "payment.paid")
    assert "Not sent: no webhook URL is set" in webhook_entry(page, paid_event)

    # The receipt: a summary, how to verify, the raw document folded away; the explanation is true.
    assert 'id="receipt-summary"' in page and 'id="receipt-verify"' in page
    raw = re.search(r'<details class="raw" id="receipt-raw"><summary>[^<]+</summary>\s*<pre class="snippet" '
                    r'id="receipt">([^<]+)</pre>', page)
    assert raw, page[-3000:]
    signature = re.search(r'id="receipt-signature"[^>]*>([^<]+)<', page).group(1)
    _, pinned = await api(app_client, "GET", "/v1/common/receipt-public-key", {})
    VerifyKey(base64.b64decode(pinned["data"]["public_key"])).verify(
        html.unescape(raw.group(1)).encode("utf-8"), base64.b64decode(signature))


async def test_a_fiat_price_shows_its_locked_rate_as_money(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("rate@example.com")
    await visitor.get("/app/payments/new")
    response = await visitor.submit("/app/payments/new", {"type": "invoice", "amount": "25", "currency": "USD",
                                                          "pay_currency": "BTC"})
    track_id = response.headers["Location"].split("/")[-1].split("?")[0]
    page = await visitor.get(f"/app/payments/{track_id}")
    rate = (await app_client.app[GATEWAY].db.fetch_one("SELECT rate_locked FROM payments WHERE track_id = :t",
                                                       {"t": track_id}))["rate_locked"]
    expected = f"1 BTC = {Decimal(rate):,.2f} USD"
    assert re.search(rf'id="rate">{re.escape(expected)} <span class="muted">\(locked ', page), (expected, page[:4000])
    assert re.search(r'id="received">0 BTC<', page) and "No deposit yet." in page


async def test_send_again_records_a_second_attempt_and_a_second_click_queues_nothing(app_client, monkeypatch):
    receiver = WebhookReceiver()
    hook_url = await receiver.start()
    try:
        gateway = app_client.app[GATEWAY]
        visitor = Visitor(app_client)
        await visitor.sign_up("again@example.com")
        await visitor.get("/app/settings")
        await visitor.submit("/app/settings/webhook", {"webhook_url": hook_url}, expect=200)
        secret = re.search(r'id="webhook_secret"[^>]*>([^<]+)<', visitor.page).group(1)
        receiver.fail_next = 100  # the shop's server is down: every attempt is refused (503)
        track_id = await paid_invoice(app_client, visitor)
        await deliver_due(gateway)
        page = await visitor.get(f"/app/payments/{track_id}")
        paid_event = event_id_of(page, "payment.paid")
        entry = webhook_entry(page, paid_event)
        assert ATTEMPT.findall(entry) == [("1", "HTTP 503 (refused)")], entry
        assert "Gave up after every retry" in entry and "sent again" not in entry
        action = f"/app/payments/{track_id}/webhooks/{paid_event}/send-again"
        assert f'action="{action}"' in entry

        receiver.fail_next = 0  # fixed: send it again from the payment's page
        response = await visitor.submit(action)
        assert response.headers["Location"] == f"/app/payments/{track_id}?notice=redelivery-queued"
        page = await visitor.get(response.headers["Location"])
        entry = webhook_entry(page, paid_event)
        assert ATTEMPT.findall(entry) == [("1", "HTTP 503 (refused)"), ("1", "HTTP 200 (accepted)")], entry
        assert entry.count('class="sent-again">sent again</strong>') == 1  # the second round, as the log has it
        assert "Delivered" in entry and f'action="{action}"' in entry  # a delivered event may be sent again too
        assert [(b["event_id"], b["track_id"]) for b in receiver.verified(secret)] == [(paid_event, track_id)]

        # Bounded: the same post again within a minute of its delivery (a double click, a re-sent form) queues
        # nothing and says so.
        response = await visitor.submit(action)
        assert response.headers["Location"] == f"/app/payments/{track_id}?notice=redelivery-too-soon"
        await deliver_due(gateway)
        assert len(receiver.requests) == 1
        assert len(ATTEMPT.findall(webhook_entry(await visitor.get(f"/app/payments/{track_id}"), paid_event))) == 2

        # A minute later, with the signing secret rotated meanwhile: the same event id and bytes, signed anew.
        await visitor.get("/app/settings")
        await visitor.submit("/app/settings/webhook", {"webhook_url": hook_url, "rotate_secret": "1"}, expect=200)
        new_secret = re.search(r'id="webhook_secret"[^>]*>([^<]+)<', visitor.page).group(1)
        assert new_secret != secret
        real_now = gateway.now
        monkeypatch.setattr(gateway, "now", lambda: real_now() + RESEND_GAP_SECONDS + 1)
        await visitor.get(f"/app/payments/{track_id}")
        response = await visitor.submit(action)
        assert response.headers["Location"] == f"/app/payments/{track_id}?notice=redelivery-queued"
        first, again = receiver.requests
        assert again["raw"] == first["raw"] and again["headers"]["X-Event-Id"] == paid_event
        assert again["headers"]["HMAC"] == hmac.new(new_secret.encode(), again["raw"], hashlib.sha512).hexdigest()
        entry = webhook_entry(await visitor.get(f"/app/payments/{track_id}"), paid_event)
        assert [result for _, result in ATTEMPT.findall(entry)] == ["HTTP 503 (refused)", "HTTP 200 (accepted)",
                                                                    "HTTP 200 (accepted)"], entry
        assert entry.count('class="sent-again"') == 2

        # An event of another payment, through this payment's address: 404, nothing sent.
        other = await paid_invoice(app_client, visitor)
        await deliver_due(gateway)
        foreign_event = event_id_of(await visitor.get(f"/app/payments/{other}"), "payment.paid")
        sent = len(receiver.requests)
        await visitor.get(f"/app/payments/{track_id}")
        await visitor.submit(f"/app/payments/{track_id}/webhooks/{foreign_event}/send-again", expect=404)
        await visitor.get(f"/app/payments/{track_id}")
        await visitor.submit(f"/app/payments/{track_id}/webhooks/NOPE/send-again", expect=404)
        await deliver_due(gateway)
        assert len(receiver.requests) == sent
    finally:
        await receiver.close()


async def test_an_event_still_being_sent_is_left_alone_and_the_account_is_bounded(app_client):
    """An event on its way (retries pending) is not queued twice; past ``RESENDS_PER_MINUTE`` posts in a minute
    the page says so with 429 and Retry-After, and nothing more is queued."""
    gateway = app_client.app[GATEWAY]
    gateway.services["rate_limiter"] = MemoryRateLimiter(clock=lambda: 6_000_030.0)  # one frozen minute
    visitor = Visitor(app_client)
    await visitor.sign_up("bounded@example.com")
    track_id = await paid_invoice(app_client, visitor)  # no webhook URL: every event was skipped
    page = await visitor.get(f"/app/payments/{track_id}")
    event = event_id_of(page, "payment.paid")
    action = f"/app/payments/{track_id}/webhooks/{event}/send-again"
    await gateway.db.execute("UPDATE webhook_events SET status = 'pending', next_attempt_at = :later"
                             " WHERE event_id = :e", {"e": event, "later": gateway.now() + 3600})
    response = await visitor.submit(action)
    assert response.headers["Location"] == f"/app/payments/{track_id}?notice=redelivery-on-its-way"
    assert (await gateway.db.fetch_val("SELECT next_attempt_at FROM webhook_events WHERE event_id = :e",
                                       {"e": event})) == gateway.now() + 3600  # untouched
    for _ in range(RESENDS_PER_MINUTE - 1):
        await visitor.get(f"/app/payments/{track_id}")
        await visitor.submit(action)
    await gateway.db.execute("UPDATE webhook_events SET status = 'no_url' WHERE event_id = :e", {"e": event})
    lines = await gateway.db.fetch_val("SELECT COUNT(*) FROM webhook_deliveries WHERE event_id = :e", {"e": event})
    await visitor.get(f"/app/payments/{track_id}")
    response = await visitor.submit(action, expect=429)
    assert int(response.headers["Retry-After"]) > 0 and 'id="form-error"' in visitor.page
    assert (await gateway.db.fetch_val("SELECT status FROM webhook_events WHERE event_id = :e", {"e": event})
            == "no_url")
    assert (await gateway.db.fetch_val("SELECT COUNT(*) FROM webhook_deliveries WHERE event_id = :e",
                                       {"e": event})) == lines


async def test_hostile_and_foreign_track_ids_are_404_and_a_viewer_cannot_send_again(app_client):
    owner = Visitor(app_client)
    await owner.sign_up("owner@example.com")
    track_id = await paid_invoice(app_client, owner)
    page = await owner.get(f"/app/payments/{track_id}")
    event = event_id_of(page, "payment.paid")
    action = f"/app/payments/{track_id}/webhooks/{event}/send-again"
    # Unknown ids are 404; a NUL never reaches the page (the edge refuses it, 400): never a 500.
    for hostile, refused in (("%3Cscript%3Ealert(1)%3C%2Fscript%3E", 404), ("..%2F..%2Fapp", 404), ("x" * 300, 404),
                             ("'%20OR%201=1--", 404), ("%00", 400)):
        await owner.get(f"/app/payments/{hostile}", expect=refused)
        await owner.get(f"/app/payments/{track_id}")
        await owner.submit(f"/app/payments/{hostile}/webhooks/{event}/send-again", expect=refused)

    # A viewer reads the page without the button, and the form itself is refused (403), nothing queued.
    link = await invite(owner, "viewer@example.com", "viewer")
    viewer = await join(app_client, link)
    page = await viewer.get(f"/app/payments/{track_id}")
    assert "Webhook payment.paid" in page and "send-again" not in page
    response = await app_client.post(action, data={"csrf_token": re.search(
        r'name="csrf_token" value="([^"]*)"', page).group(1)}, allow_redirects=False)
    assert response.status == 403 and "webhook:manage" in await response.text()
    status = await app_client.app[GATEWAY].db.fetch_val("SELECT status FROM webhook_events WHERE event_id = :e",
                                                        {"e": event})
    assert status == "no_url"

    # Another merchant: the payment and its events do not exist for them.
    app_client.session.cookie_jar.clear()
    stranger = Visitor(app_client)
    await stranger.sign_up("stranger@example.com")
    await stranger.get(f"/app/payments/{track_id}", expect=404)
    await stranger.get("/app")
    await stranger.submit(action, expect=404)


async def test_a_hostile_transaction_id_is_shown_as_text_never_linked(app_client):
    """A deposit row whose id is not one a chain mints (as a hostile or broken node could report) is escaped
    text without a link; the explorer template is checked when the config is read."""
    visitor = Visitor(app_client)
    await visitor.sign_up("txid@example.com")
    track_id = await paid_invoice(app_client, visitor)
    db = app_client.app[GATEWAY].db
    hostile = '"><script>alert(1)</script>'
    await db.execute("UPDATE deposits SET tx_hash = :h WHERE track_id = :t", {"h": hostile, "t": track_id})
    page = await visitor.get(f"/app/payments/{track_id}")
    assert hostile not in page and "&lt;script&gt;" in page
    assert "explorer.example" not in page
