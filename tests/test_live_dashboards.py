"""The merchant's own views of a payment, live (issue 31), both databases: the dashboard's payment detail follows
any open payment through its authenticated stream (``GET /app/payments/{id}/events``: the merchant's own payments
only, ended with the session, bounded per merchant), the mini-app's list its open invoices through the hosted
page's public stream (``GET /pay/{id}/events``).

The public stream (heartbeats, the change feed) is tests/test_live_pages.py's; here: which payments the merchant's
pages follow, that the page may open the stream (CSP), and the dashboard stream's own rules.
"""

from __future__ import annotations

import asyncio
import re

from orbchain.testing.api import create_payment
from orbchain.web.keys import GATEWAY

from .confirmations_support import litecoin_plugins, ltc_invoice, stream_shows_every_count
from .dashboard_support import Visitor
from .litecoind import faucet, litecoind_node  # noqa: F401 - session fixtures
from .live_support import EventStream
from .support import Devnet, api, bearer
from .telegram_support import link_via_bot, open_session, standin, telegram_shop  # noqa: F401 - fixture
from .test_live_pages import in_use
from .test_pay_page import merchant_key, new_invoice

EVENTS = re.compile(r'id="status" data-events="([^"]+)">(\w+)<')
SCRIPT = '<script nonce="{}" src="/static/dashboard/payment_live.js"></script>'


def csp_of(response) -> str:
    return response.headers["Content-Security-Policy"]


async def detail(client, track_id: str) -> tuple[str, str]:
    """(page, its Content-Security-Policy) of the signed-in merchant's payment detail."""
    response = await client.get(f"/app/payments/{track_id}", allow_redirects=False)
    assert response.status == 200, response.status
    return await response.text(), csp_of(response)


async def test_the_detail_of_an_open_invoice_follows_the_dashboard_stream(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    visitor = Visitor(client)
    keys = await visitor.sign_up("live-detail@example.com")
    invoice = await new_invoice(client, keys["merchant_api_key"], amount="0.01", currency="BTC")
    track_id = invoice["track_id"]

    page, csp = await detail(client, track_id)
    events_url, shown = EVENTS.search(page).groups()
    assert (events_url, shown) == (f"/app/payments/{track_id}/events", "Waiting")
    assert "connect-src 'self'" in csp
    nonce = re.search(r"'nonce-([^']+)'", csp).group(1)
    assert SCRIPT.format(nonce) in page  # a static script under the page's nonce: script-src stays nonce-only
    script = await client.get("/static/dashboard/payment_live.js")
    assert script.status == 200 and "EventSource" in await script.text()

    stream = await dashboard_stream(client, track_id)
    assert (await stream.event())["status"] == "Waiting"
    await visitor.submit(f"/app/payments/{track_id}/cancel", token="", expect=403)  # CSRF as before
    await visitor.get(f"/app/payments/{track_id}")
    await visitor.submit(f"/app/payments/{track_id}/cancel")
    cancelled = await stream.until("Cancelled")
    assert cancelled["final"] and await stream.event() is None  # the stream ended with the final state

    page, csp = await detail(client, track_id)  # closed: no stream, no reload, no connect-src
    assert 'id="status">Cancelled<' in page and "connect-src" not in csp and "payment_live.js" not in page


async def test_the_detail_stream_shows_every_confirmation_of_a_real_node(
        make_client, make_config, litecoind_node, faucet):  # noqa: F811 - session fixtures
    """Issue 43: the dashboard's live detail counts each block litecoind mines, 0 to the threshold, each awaited
    before the next block is mined; a count the confirmation feed does not announce fails here."""
    client = await make_client(make_config(scheduler={"enabled": False}, plugin=litecoin_plugins(litecoind_node)))
    keys = await Visitor(client).sign_up("live-counts@example.com")
    invoice = await ltc_invoice(client, keys["merchant_api_key"])
    await stream_shows_every_count(client, faucet, invoice, await dashboard_stream(client, invoice["track_id"]))


async def dashboard_stream(client, track_id: str) -> EventStream:
    response = await client.get(f"/app/payments/{track_id}/events", allow_redirects=False)
    assert response.status == 200, (response.status, await response.text())
    assert response.headers["Content-Type"].startswith("text/event-stream")
    assert response.headers["X-Accel-Buffering"] == "no" and response.headers["Cache-Control"] == "no-cache"
    return EventStream(response)


async def white_label(client, key: str, amount: str = "0.01") -> dict:
    status, body = await api(client, "POST", "/v1/payment/white-label", {"merchant_api_key": key},
                             json={"currency": "BTC", "amount": amount})
    assert status == 200, body
    return body["data"]


async def test_a_white_label_payment_detail_follows_its_own_stream_until_paid(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    gateway = client.app[GATEWAY]
    visitor = Visitor(client)
    keys = await visitor.sign_up("live-white@example.com")
    payment = await white_label(client, keys["merchant_api_key"])
    track_id = payment["track_id"]
    page, csp = await detail(client, track_id)
    assert EVENTS.search(page).groups() == (f"/app/payments/{track_id}/events", "Waiting")
    assert "connect-src 'self'" in csp and "payment_live.js" in page
    refused = await client.get(f"/pay/{track_id}/events")  # its track id is still no public capability
    assert refused.status == 404 and (await refused.json())["error"]["type"] == "not_found"

    db = gateway.db
    before = in_use(db)
    stream = await dashboard_stream(client, track_id)
    first = await stream.event()
    assert (first["type"], first["status"], first["paid_amount"]) == ("white_label", "Waiting", "0")
    assert in_use(db) == before  # an idle stream holds no connection
    devnet = Devnet(client)
    await devnet.pay("BTC", payment["address"], "0.01")
    paying = await stream.until("Paying")
    assert paying["paid_amount"] == "0.01" and [t["confirmations"] for t in paying["transactions"]] == [0]
    await devnet.mine(6)
    paid = await stream.until("Paid")
    assert paid["final"] and await stream.event() is None
    assert gateway.services["live_hub"].open_streams == 0


async def test_a_static_payment_detail_is_live_too(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    visitor = Visitor(client)
    keys = await visitor.sign_up("live-static@example.com")
    status, body = await api(client, "POST", "/v1/payment/static-address", {"merchant_api_key": keys["merchant_api_key"]},
                             json={"currency": "BTC"})
    assert status == 200, body
    track_id = body["data"]["track_id"]
    page, _ = await detail(client, track_id)
    assert EVENTS.search(page).groups() == (f"/app/payments/{track_id}/events", "Waiting")
    stream = await dashboard_stream(client, track_id)
    first = await stream.event()
    assert (first["type"], first["status"], first["pay_amount"]) == ("static_address", "Waiting", None)
    await Devnet(client).pay("BTC", body["data"]["address"], "0.003")
    assert (await stream.until("Paying"))["paid_amount"] == "0.003"


async def test_another_merchants_payment_is_refused_as_unknown(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    other_key = await merchant_key(client, "someone-else@example.com")
    theirs = (await white_label(client, other_key))["track_id"]
    visitor = Visitor(client)
    await visitor.sign_up("live-own@example.com")
    for track_id in (theirs, "noSuchPayment"):
        refused = await client.get(f"/app/payments/{track_id}/events", allow_redirects=False)
        assert refused.status == 404 and refused.content_type == "text/html"
    assert client.app[GATEWAY].services["live_hub"].open_streams == 0
    client.session.cookie_jar.clear()  # no session at all: to the sign-in page, like every /app page
    anonymous = await client.get(f"/app/payments/{theirs}/events", allow_redirects=False)
    assert anonymous.status == 303 and anonymous.headers["Location"].startswith("/app/login")


async def watched_white_label(make_client, make_config, email: str):
    """(client, visitor, track id, stream): a signed-in merchant watching a new white-label payment's detail
    stream, past its first (Waiting) event; the session is checked every second."""
    client = await make_client(make_config(scheduler={"enabled": False}, live={"heartbeat_seconds": 1}))
    visitor = Visitor(client)
    keys = await visitor.sign_up(email)
    track_id = (await white_label(client, keys["merchant_api_key"]))["track_id"]
    stream = await dashboard_stream(client, track_id)
    assert (await stream.event())["status"] == "Waiting"
    return client, visitor, track_id, stream


async def rest_of(stream: EventStream) -> list:
    """Everything the stream still sends, until it ends (bounded per read)."""
    items = []
    while (item := await stream.next(timeout=10)) is not None:
        items.append(item)
    return items


async def test_a_revoked_session_ends_the_stream(make_client, make_config):
    client, visitor, track_id, stream = await watched_white_label(make_client, make_config, "live-revoked@example.com")
    await visitor.get("/app")
    await visitor.submit("/app/logout")  # signs out: the token is revoked everywhere
    items = await rest_of(stream)
    assert items and items[-1]["event"] == "signed-out"  # then the end, the payment still open
    assert client.app[GATEWAY].services["live_hub"].open_streams == 0
    again = await client.get(f"/app/payments/{track_id}/events", allow_redirects=False)
    assert again.status == 303 and again.headers["Location"].startswith("/app/login")


async def test_dashboard_streams_are_bounded_per_merchant_and_share_the_total(make_client, make_config):
    client = await make_client(make_config(
        scheduler={"enabled": False},
        live={"max_streams": 3, "max_streams_per_merchant": 2, "max_streams_per_ip": 8, "heartbeat_seconds": 1,
              "max_page_share_percent": 100}))  # one payment may take them all here: its share is tested apart
    visitor = Visitor(client)
    keys = await visitor.sign_up("live-bounds@example.com")
    track_id = (await white_label(client, keys["merchant_api_key"]))["track_id"]
    streams = [await dashboard_stream(client, track_id) for _ in range(2)]
    refused = await client.get(f"/app/payments/{track_id}/events", allow_redirects=False)
    assert refused.status == 429 and int(refused.headers["Retry-After"]) > 0
    invoice = await new_invoice(client, keys["merchant_api_key"], amount="0.01", currency="BTC")
    streams.append(EventStream(await client.get(f"/pay/{invoice['track_id']}/events")))  # the third in total
    hub = client.app[GATEWAY].services["live_hub"]
    assert hub.open_streams == 3
    streams[0].response.close()
    for _ in range(200):  # noticed at the next heartbeat
        if hub.open_streams == 2:
            break
        await asyncio.sleep(0.05)
    assert hub.open_streams == 2
    await dashboard_stream(client, track_id)  # room again for this merchant
    full = await client.get(f"/app/payments/{track_id}/events", allow_redirects=False)
    assert full.status == 503 and int(full.headers["Retry-After"]) > 0


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


async def test_a_session_check_that_fails_ends_the_stream_unconfirmed(make_client, make_config, monkeypatch):
    from orbchain.plugins.dashboard import routes_payments

    client, _, _, stream = await watched_white_label(make_client, make_config, "live-db-away@example.com")

    async def unreachable(request):
        raise ConnectionError("database away")

    monkeypatch.setattr(routes_payments, "current_session", unreachable)  # the stream's check only
    items = await rest_of(stream)
    assert all(i.get("event") != "signed-out" for i in items)  # ended, neither shown on nor said signed out
    assert client.app[GATEWAY].services["live_hub"].open_streams == 0
