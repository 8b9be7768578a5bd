"""SPEC 7 "maintenance: all write operations rejected" on the GETs that write.

The middleware refuses every POST/PUT/PATCH/DELETE; a GET (or HEAD) that
writes refuses by itself with ``core.infra.maintenance.refuse_in_maintenance``:
resolving a payment link (mints an invoice), the hosted page's coin picker
(re-prices the invoice, derives an address), and the standing receive
addresses (``/dashboard/deposit-addresses``, ``/dashboard/receive-address``,
``/tgapp/receive``: deriving a missing one writes). Each answers the 503
``maintenance`` envelope (a page on pages), and every table is unchanged;
its reading branch (the amount prompt, the page, an address derived before)
still answers. Both databases.
"""

from __future__ import annotations

import re

import pytest

from orbchain.testing.fixtures import open_shop
from orbchain.web.auth import AUTH_ATTR

from .dashboard_support import Visitor
from .support import api, bearer, database_rows, freeze_clock
from .telegram_support import link_via_bot, open_session, telegram_shop

LINKS = "/dashboard/payment-links"


@pytest.fixture
async def shop(make_config, make_client):
    return await open_shop(make_config, make_client)


async def make_link(shop, **fields):
    status, body = await api(shop.client, "POST", LINKS, shop.merchant.jwt, json={"coin": "BTC", **fields})
    assert status == 200, body
    return body["data"]


async def payment_count(shop):
    status, body = await api(shop.client, "GET", "/v1/payment", shop.merchant.merchant_key)
    assert status == 200, body
    return body["data"]["total"]


async def refused(response):
    """The spec's 503 envelope of maintenance mode."""
    body = await response.json()
    assert response.status == 503, body
    assert (body["status"], body["message"], body["error"]["type"], body["data"]) == (
        503, "maintenance", "maintenance", None)


async def test_resolving_a_link_mints_nothing_in_maintenance(shop):
    fixed = await make_link(shop, amount="0.001")
    open_amount = await make_link(shop)
    shop.gateway.maintenance = True
    before = await database_rows(shop.gateway.db)
    for slug, query in ((fixed["slug"], {}), (open_amount["slug"], {"amount": "0.002"})):
        response = await shop.client.get(f"/l/{slug}", params=query, allow_redirects=False)
        assert response.status == 503 and response.content_type == "text/html", slug
        assert "Temporarily unavailable" in await response.text()
    prompt = await shop.client.get(f"/l/{open_amount['slug']}", allow_redirects=False)
    assert prompt.status == 200  # the amount prompt only reads
    assert await database_rows(shop.gateway.db) == before
    shop.gateway.maintenance = False
    assert await payment_count(shop) == 0
    [listed_open, listed_fixed] = (await api(shop.client, "GET", LINKS, shop.merchant.jwt))[1]["data"]["links"]
    assert (listed_fixed["uses"], listed_open["uses"]) == (0, 0)
    assert (await shop.client.get(f"/l/{fixed['slug']}", allow_redirects=False)).status == 302


async def test_the_coin_picker_changes_nothing_in_maintenance(shop):
    status, body = await api(shop.client, "POST", "/v1/payment/invoice", shop.merchant.merchant_key,
                             json={"amount": "10", "currency": "USD", "accepted_coins": ["BTC", "ETH"]})
    assert status == 200, body
    invoice = body["data"]
    shop.gateway.maintenance = True
    before = await database_rows(shop.gateway.db)
    for method in ("GET", "HEAD"):
        response = await shop.client.request(method, f"/pay/{invoice['track_id']}?pay_currency=ETH",
                                             allow_redirects=False)
        assert response.status == 503 and response.content_type == "text/html", method
    page = await shop.client.get(f"/pay/{invoice['track_id']}")
    assert page.status == 200 and invoice["address"] in await page.text()  # the page itself only reads
    assert await database_rows(shop.gateway.db) == before


async def addresses_listed(shop):
    status, body = await api(shop.client, "GET", "/dashboard/deposit-addresses", shop.merchant.jwt)
    assert status == 200, body
    return {row["coin"]: row["address"] for row in body["data"]["addresses"]}


async def test_standing_addresses_are_read_not_derived_in_maintenance(shop):
    client, jwt, db = shop.client, shop.merchant.jwt, shop.gateway.db
    shop.gateway.maintenance = True
    before = await database_rows(db)
    await refused(await client.get("/dashboard/receive-address?coin=BTC", headers=jwt))
    await refused(await client.get("/dashboard/deposit-addresses", headers=jwt))
    assert (await client.head("/dashboard/deposit-addresses", headers=jwt)).status == 503
    assert await database_rows(db) == before

    shop.gateway.maintenance = False
    status, body = await api(client, "GET", "/dashboard/receive-address?coin=BTC", jwt)
    assert status == 200, body
    btc = body["data"]["address"]
    shop.gateway.maintenance = True
    before = await database_rows(db)
    status, body = await api(client, "GET", "/dashboard/receive-address?coin=BTC", jwt)
    assert (status, body["data"]) == (200, {"coin": "BTC", "address": btc})  # derived before: still read
    # The list needs addresses not derived yet: refused whole, rather than listing some coins as if served alone.
    await refused(await client.get("/dashboard/deposit-addresses", headers=jwt))
    assert (await api(client, "GET", "/dashboard/balances", jwt))[0] == 200  # plain reads stay up
    assert await database_rows(db) == before

    shop.gateway.maintenance = False
    listed = await addresses_listed(shop)
    assert listed["BTC"] == btc and len(listed) > 1
    shop.gateway.maintenance = True
    before = await database_rows(db)
    assert await addresses_listed(shop) == listed
    assert await database_rows(db) == before


async def test_the_mini_app_receive_address_is_read_not_derived_in_maintenance(make_client, make_config, standin):
    client, merchant, gateway = await telegram_shop(make_client, make_config, standin)
    await link_via_bot(client, gateway, standin, merchant)
    mini = bearer((await open_session(client, gateway))["token"])
    gateway.maintenance = True
    before = await database_rows(gateway.db)
    await refused(await client.get("/tgapp/receive?coin=BTC", headers=mini))
    assert (await api(client, "GET", "/tgapp/balances", mini))[0] == 200
    assert await database_rows(gateway.db) == before

    gateway.maintenance = False
    status, body = await api(client, "GET", "/tgapp/receive?coin=BTC", mini)
    assert status == 200, body
    gateway.maintenance = True
    before = await database_rows(gateway.db)
    assert await api(client, "GET", "/tgapp/receive?coin=BTC", mini) == (status, body)
    assert await database_rows(gateway.db) == before


# -- every GET and HEAD route: in maintenance, none writes ---------------------------------------------

# Answers a sweep may see: read (200, 3xx), refused (503), or nothing there for these ids and inputs.
SWEEP_STATUSES = {200, 302, 303, 400, 401, 403, 404, 410, 503}
# GETs that would write with these inputs, and so must refuse.
WRITING_GETS = {"/pay/{track_id}?pay_currency=ETH", "/l/{slug}", "/dashboard/deposit-addresses",
                "/dashboard/receive-address?coin=BTC"}


async def sweep_data(shop):
    """Ids that make each route find something: an invoice, a link, a brand, a plan, a subscription, a key."""
    client, merchant = shop.client, shop.merchant
    made = {}
    for path, headers, body, name in (
            ("/v1/payment/invoice", merchant.merchant_key, {"amount": "10", "currency": "USD"}, "track_id"),
            (LINKS, merchant.jwt, {"coin": "BTC", "amount": "0.001"}, "slug"),
            ("/dashboard/brands", merchant.jwt, {"name": "Shop", "slug": "shop"}, "id"),
            ("/dashboard/plans", merchant.jwt, {"label": "Monthly", "amount_usd": "5", "interval_sec": 86400},
             "plan_id")):
        status, answer = await api(client, "POST", path, headers, json=body)
        assert status == 200, answer
        made[name] = answer["data"][name]
    subscribed = await client.post(f"/subscribe/{made['plan_id']}", data={"email": "payer@example.com"},
                                   allow_redirects=False)
    assert subscribed.status == 303, await subscribed.text()
    made["token"] = subscribed.headers["Location"].rsplit("/", 1)[-1]
    account = (await api(client, "GET", "/dashboard/account", merchant.jwt))[1]["data"]["account"]
    keys = (await api(client, "GET", "/dashboard/api-keys", merchant.jwt))[1]["data"]
    made.update(account_id=account["account_id"], key_id=keys["keys"][0]["id"], plugin="links",
                path="donate.js", color="aabbcc")
    return made


async def test_no_get_or_head_route_writes_in_maintenance(make_config, make_client):
    shop = await open_shop(make_config, make_client, rate_limits={"enabled": False})
    client, merchant, gateway = shop.client, shop.merchant, shop.gateway
    ids = await sweep_data(shop)
    visitor = Visitor(client)
    await visitor.sign_in("merchant@example.com", "s3cret-pass")  # the /app pages' cookie
    headers = {"jwt": merchant.jwt, "merchant_key": merchant.merchant_key, "payout_key": merchant.payout_key,
               "general_key": merchant.general_key}
    for key, path in (("merchant_key", "/v1/payment"), ("payout_key", "/v1/payout/x"),
                      ("general_key", "/v1/general/account/balance")):  # a key's use is recorded once a minute
        await client.get(path, headers=headers[key])
    await client.get("/ready")  # the devnet chain writes its first block on first use
    freeze_clock(gateway)
    gateway.maintenance = True
    before = await database_rows(gateway.db)
    answers = {}
    for route in client.app.router.routes():
        if route.method not in ("GET", "HEAD"):
            continue
        template = route.resource.canonical
        path = re.sub(r"\{(\w+)(:[^}]*)?\}", lambda m: str(ids.get(m.group(1), "x")), template)
        spec = getattr(route.handler, AUTH_ATTR, None)
        sent = headers[sorted(spec.kinds)[0]] if spec else {}
        for query in ("", "?pay_currency=ETH", "?coin=BTC", "?amount=1"):
            response = await client.request(route.method, path + query, headers=sent, allow_redirects=False)
            answers[f"{route.method} {template}{query}"] = response.status
    assert {answer for answer in answers.values()} <= SWEEP_STATUSES, answers
    for writer in WRITING_GETS:  # and HEAD where it is routed
        assert {status for asked, status in answers.items() if asked.split(" ", 1)[1] == writer} == {503}, writer
    assert await database_rows(gateway.db) == before
