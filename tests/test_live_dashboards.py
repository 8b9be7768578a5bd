"""The merchant's own views of a payment, live (issue 31): the dashboard's payment detail and the mini-app's
list follow an open invoice through the hosted page's public stream (``GET /pay/{id}/events``), both databases.

The stream itself (bounds, heartbeats, the change feed) is tests/test_live_pages.py's; here: which payments the
merchant's pages follow, that the page may open the stream (CSP) and that what it opens is the payment's stream.
"""

from __future__ import annotations

import re

from orbchain.testing.api import create_payment
from orbchain.web.keys import GATEWAY

from .dashboard_support import Visitor
from .live_support import EventStream
from .support import api, bearer
from .telegram_support import link_via_bot, open_session, standin, telegram_shop  # noqa: F401 - fixture
from .test_pay_page import new_invoice

EVENTS = re.compile(r'id="status" data-events="([^"]+)">(\w+)<')
SCRIPT = '<script nonce="{}" src="/static/dashboard/payment_live.js"></script>'


def csp_of(response) -> str:
    return response.headers["Content-Security-Policy"]


async def detail(client, track_id: str) -> tuple[str, str]:
    """(page, its Content-Security-Policy) of the signed-in merchant's payment detail."""
    response = await client.get(f"/app/payments/{track_id}", allow_redirects=False)
    assert response.status == 200, response.status
    return await response.text(), csp_of(response)


async def test_the_detail_of_an_open_invoice_follows_the_hosted_stream(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    visitor = Visitor(client)
    keys = await visitor.sign_up("live-detail@example.com")
    invoice = await new_invoice(client, keys["merchant_api_key"], amount="0.01", currency="BTC")
    track_id = invoice["track_id"]

    page, csp = await detail(client, track_id)
    events_url, shown = EVENTS.search(page).groups()
    assert (events_url, shown) == (f"/pay/{track_id}/events", "Waiting")
    assert "connect-src 'self'" in csp and "data-live" not in page
    nonce = re.search(r"'nonce-([^']+)'", csp).group(1)
    assert SCRIPT.format(nonce) in page  # a static script under the page's nonce: script-src stays nonce-only
    script = await client.get("/static/dashboard/payment_live.js")
    assert script.status == 200 and "EventSource" in await script.text()

    stream = EventStream(await client.get(events_url))
    assert (await stream.event())["status"] == "Waiting"
    await visitor.submit(f"/app/payments/{track_id}/cancel", token="", expect=403)  # CSRF as before
    await visitor.get(f"/app/payments/{track_id}")
    await visitor.submit(f"/app/payments/{track_id}/cancel")
    cancelled = await stream.until("Cancelled")
    assert cancelled["final"] and await stream.event() is None  # the stream ended with the final state

    page, csp = await detail(client, track_id)  # closed: no stream, no reload, no connect-src
    assert 'id="status">Cancelled<' in page and "connect-src" not in csp and "payment_live.js" not in page


async def test_an_open_white_label_payment_has_no_public_stream_and_reloads(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    visitor = Visitor(client)
    keys = await visitor.sign_up("live-white@example.com")
    status, body = await api(client, "POST", "/v1/payment/white-label", {"merchant_api_key": keys["merchant_api_key"]},
                             json={"currency": "BTC", "amount": "0.01"})
    assert status == 200, body
    track_id = body["data"]["track_id"]
    page, csp = await detail(client, track_id)
    assert 'id="status" data-live="15">Waiting<' in page and "data-events" not in page
    assert "connect-src" not in csp and "payment_live.js" not in page
    refused = await client.get(f"/pay/{track_id}/events")  # its track id is no public capability
    assert refused.status == 404 and (await refused.json())["error"]["type"] == "not_found"


async def test_the_mini_app_follows_its_newest_open_invoices(make_client, make_config, standin):  # noqa: F811
    client, merchant, gateway = await telegram_shop(make_client, make_config, standin)
    await link_via_bot(client, gateway, standin, merchant)
    mini = bearer((await open_session(client, gateway))["token"])
    white_label = await create_payment(client, merchant, "BTC", "0.01")
    invoices = [await new_invoice(client, merchant.keys["merchant_api_key"], amount=f"0.0{n + 1}", currency="BTC")
                for n in range(5)]
    cancelled = invoices[-1]["track_id"]
    status, body = await api(client, "POST", f"/v1/payment/{cancelled}/cancel", merchant.merchant_key)
    assert status == 200, body

    status, body = await api(client, "GET", "/tgapp/payments", mini)
    assert status == 200
    urls = {p["track_id"]: p["events_url"] for p in body["data"]["payments"]}
    followed = [i["track_id"] for i in invoices[-2::-1]]  # the newest open ones, at most 4
    assert {t: u for t, u in urls.items() if u} == {t: f"/pay/{t}/events" for t in followed}
    assert urls[white_label["track_id"]] is None and urls[cancelled] is None

    stream = EventStream(await client.get(urls[followed[0]]))
    state = await stream.event()
    assert state["track_id"] == followed[0] and state["status"] == "Waiting"
    assert client.app[GATEWAY].services["live_hub"].open_streams == 1
