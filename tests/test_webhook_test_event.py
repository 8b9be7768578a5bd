"""The webhook test event (issue 32 item 8): the dashboard button and POST /dashboard/settings/webhook/test,
and the settings page's help for a refused private URL, on both databases.

The test event goes through the outbox like any other: it is read back from the receiver (signed with the
merchant's secret) and from the delivery log, after the delivery job ran.
"""

from __future__ import annotations

import pytest

from orbchain.core.events.test_event import PER_WINDOW, WINDOW_SECONDS
from orbchain.core.events.webhooks import deliver_due
from orbchain.web.keys import GATEWAY

from .dashboard_support import Visitor
from .support import WebhookReceiver, advance_clock, api, freeze_clock, signup

TEST_ROUTE = "/dashboard/settings/webhook/test"


@pytest.fixture
async def receiver():
    hook = WebhookReceiver()
    await hook.start()
    yield hook
    await hook.close()


async def test_the_api_sends_a_signed_test_event_shown_in_the_log_and_rate_limited(make_client, make_config,
                                                                                 receiver):
    client = await make_client(make_config(scheduler={"enabled": False}))
    gateway = client.app[GATEWAY]
    merchant = await signup(client)
    status, body = await api(client, "POST", TEST_ROUTE, merchant.jwt)
    assert status == 400 and body["error"]["type"] == "validation" and "webhook_url" in body["message"], body
    status, body = await api(client, "PUT", "/dashboard/settings/webhook", merchant.jwt,
                             json={"webhook_url": str(receiver.server.make_url("/hook"))})
    secret = body["data"]["webhook_secret"]
    assert (await api(client, "POST", TEST_ROUTE, merchant.merchant_key))[0] == 401  # the dashboard's JWT only
    start = freeze_clock(gateway)
    status, body = await api(client, "POST", TEST_ROUTE, {**merchant.jwt, "X-Request-Id": "test-req-0001"})
    assert status == 200 and body["data"]["event_type"] == "webhook.test", body
    event_id = body["data"]["event_id"]
    await deliver_due(gateway)
    [sent] = receiver.verified(secret)
    assert sent["event_id"] == event_id and sent["event_type"] == "webhook.test" and sent["type"] == "test"
    assert sent["merchant_id"] == merchant.merchant_id and sent["request_id"] == "test-req-0001"
    status, body = await api(client, "GET", "/dashboard/webhook-logs", merchant.jwt)
    [logged] = body["data"]["logs"]
    assert logged["event_id"] == event_id and logged["event_type"] == "webhook.test"
    assert logged["success"] and logged["attempt"] == 1
    for _ in range(PER_WINDOW - 1):
        assert (await api(client, "POST", TEST_ROUTE, merchant.jwt))[0] == 200
    response = await client.post(TEST_ROUTE, headers=merchant.jwt)
    refused = await response.json()
    assert response.status == 429 and refused["error"]["type"] == "rate_limit", refused
    assert int(response.headers["Retry-After"]) == WINDOW_SECONDS - start % WINDOW_SECONDS
    advance_clock(gateway, WINDOW_SECONDS)
    status, body = await api(client, "POST", TEST_ROUTE, merchant.jwt)
    assert status == 200 and body["data"]["event_id"] != event_id
    await deliver_due(gateway)
    assert len(receiver.verified(secret)) == PER_WINDOW + 1


async def test_the_settings_button_queues_a_test_event_behind_the_form_token(make_client, make_config, receiver):
    client = await make_client(make_config(scheduler={"enabled": False}))
    visitor = Visitor(client)
    await visitor.sign_up("hook-test@example.com")
    page = await visitor.get("/app/settings")
    assert 'id="send-test-event"' not in page  # no URL yet: nothing to test
    await visitor.submit("/app/settings/webhook", {"webhook_url": str(receiver.server.make_url("/hook"))},
                         expect=200)
    page = await visitor.get("/app/settings")
    assert 'id="send-test-event"' in page and 'action="/app/settings/webhook/test"' in page
    await visitor.submit("/app/settings/webhook/test", token="forged", expect=403)  # CSRF: refused
    await visitor.get("/app/settings")  # (the one event delivered below shows the forged post queued none)
    response = await visitor.submit("/app/settings/webhook/test")
    assert response.headers["Location"] == "/app/webhooks?notice=test-event-queued"
    await deliver_due(client.app[GATEWAY])
    assert [r["body"]["event_type"] for r in receiver.requests] == ["webhook.test"]
    log = await visitor.get("/app/webhooks?notice=test-event-queued")
    assert "webhook.test" in log and "Delivered" in log and "A test event was queued" in log


async def test_a_refused_private_url_says_how_to_allow_one_in_development(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, webhooks={"allow_private_urls": False}))
    visitor = Visitor(client)
    await visitor.sign_up("private@example.com")
    await visitor.get("/app/settings")
    await visitor.submit("/app/settings/webhook", {"webhook_url": "http://127.0.0.1:9/hook"}, expect=400)
    assert 'id="private-url-help"' in visitor.page and "ORBCHAIN_ALLOW_PRIVATE_URLS=true" in visitor.page
    assert 'value="http://127.0.0.1:9/hook"' in visitor.page  # what was typed is kept
    await visitor.submit("/app/settings/webhook", {"webhook_url": "not a url"}, expect=400)
    assert 'id="private-url-help"' not in visitor.page  # other refusals need no such help
