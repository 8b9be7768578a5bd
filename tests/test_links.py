"""Payment links (plugins/links, SPEC 2.16, 3.6, 4.11, 4.14, 8), on both databases.

The public resolver is driven over HTTP like a browser would (redirects not
followed), and every minted invoice is read back through the merchant API.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from html.parser import HTMLParser

import pytest

from orbchain import api as services
from orbchain.core.infra.config import ConfigError
from orbchain.core.types.errors import Gone
from orbchain.core.money.prices import PriceService
from orbchain.core.infra.ratelimit import MemoryRateLimiter
from orbchain.plugins.links import store
from orbchain.plugins.links.settings import parse_settings
from orbchain.testing.fixtures import open_shop

from .support import Devnet, api, signup

PATH = "/dashboard/payment-links"


class MovingPrices:
    """A price source whose BTC price the test moves (a stand-in for a market)."""

    name = "moving"

    def __init__(self, btc_usd: str) -> None:
        self.btc_usd = Decimal(btc_usd)

    async def fetch(self, symbols):
        return {s: self.btc_usd for s in symbols if s == "BTC"}

    async def fetch_fiat(self, currencies):
        return {"EUR": Decimal("0.5")}


class TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


@pytest.fixture
async def shop(make_config, make_client):
    return await open_shop(make_config, make_client, plugin={"links": {"mint_per_minute": 100}})


async def create(shop, **fields):
    body = {"coin": "BTC", **fields}
    return await api(shop.client, "POST", PATH, shop.merchant.jwt, json=body)


async def created(shop, **fields):
    status, body = await create(shop, **fields)
    assert status == 200, body
    return body["data"]


async def links(shop):
    status, body = await api(shop.client, "GET", PATH, shop.merchant.jwt)
    assert status == 200, body
    return body["data"]["links"]


async def resolve(shop, slug, query=None, *, same_browser=False, headers=None):
    """GET /l/<slug> as a new visitor (an empty cookie jar), or as the one before (``same_browser``)."""
    if not same_browser:
        shop.client.session.cookie_jar.clear()
    return await shop.client.get(f"/l/{slug}", params=query or {}, allow_redirects=False, headers=headers)


async def minted(shop, slug, query=None, **visitor):
    """Resolve and follow nothing: the new invoice as the merchant API shows it."""
    response = await resolve(shop, slug, query, **visitor)
    assert response.status == 302, await response.text()
    location = response.headers["Location"]
    assert location.startswith("/pay/") and response.headers["Cache-Control"] == "no-store"
    status, body = await api(shop.client, "GET", f"/v1/payment/{location[5:]}", shop.merchant.merchant_key)
    assert status == 200, body
    return body["data"]


async def payment_count(shop):
    _, body = await api(shop.client, "GET", "/v1/payment", shop.merchant.merchant_key)
    return body["data"]["total"]


# -- the dashboard routes ------------------------------------------------------------------------


async def test_create_list_patch(shop):
    gateway = shop.gateway
    fixed = await created(shop, amount="0.001", lifetime=15, description="Coffee")
    assert fixed["coin"] == "BTC" and fixed["amount"] == "0.001" and fixed["amount_fiat"] is None
    assert fixed["enabled"] is True and fixed["uses"] == 0 and fixed["lifetime"] == 15
    assert len(fixed["slug"]) == 12 and store.is_slug(fixed["slug"])
    assert fixed["url"] == f"{gateway.config.base_url}/l/{fixed['slug']}"
    fiat = await created(shop, coin="btc", amount_fiat="12.50", fiat_currency="eur")
    assert fiat["coin"] == "BTC" and fiat["amount_fiat"] == "12.5" and fiat["fiat_currency"] == "EUR"
    open_amount = await created(shop)
    assert open_amount["amount"] is None and open_amount["amount_fiat"] is None
    assert [link["id"] for link in await links(shop)] == [open_amount["id"], fiat["id"], fixed["id"]]

    status, body = await api(shop.client, "PATCH", f"{PATH}/{fixed['id']}", shop.merchant.jwt,
                             json={"enabled": False})
    assert status == 200 and body["data"] == {**fixed, "enabled": False}
    status, body = await api(shop.client, "PATCH", f"{PATH}/{fixed['id']}", shop.merchant.jwt,
                             json={"enabled": True})
    assert status == 200 and body["data"]["enabled"] is True


@pytest.mark.parametrize("fields, field", [
    ({"coin": None}, "coin"),
    ({"coin": "NOPE"}, "coin"),
    ({"amount": "0.001", "amount_fiat": "5", "fiat_currency": "USD"}, "amount"),
    ({"amount_fiat": "5"}, "fiat_currency"),
    ({"amount_fiat": "5", "fiat_currency": "XYZ"}, "fiat_currency"),
    ({"amount": "0.001", "fiat_currency": "USD"}, "fiat_currency"),
    ({"amount": "0"}, "amount"),
    ({"amount": "-1"}, "amount"),
    ({"amount": "0.000000001"}, "amount"),  # finer than a satoshi
    ({"amount_fiat": "abc", "fiat_currency": "USD"}, "amount_fiat"),
    # Issue 42 item 8: a price finer than the currency's minor unit, or below the coin's smallest payment now.
    ({"amount_fiat": "5.001", "fiat_currency": "USD"}, "amount_fiat"),
    ({"amount_fiat": "500.5", "fiat_currency": "JPY"}, "amount_fiat"),
    ({"amount_fiat": "0.10", "fiat_currency": "USD"}, "amount_fiat"),  # BTC at 60000: 167 satoshi
    ({"amount": "0.000005"}, "amount"),  # 500 satoshi
    ({"lifetime": 0}, "lifetime"),
    ({"lifetime": 43201}, "lifetime"),
    ({"description": "d" * 501}, "description"),
])
async def test_bad_input_names_the_field_and_creates_nothing(shop, fields, field):
    body = {"coin": "BTC", **fields}
    status, answer = await api(shop.client, "POST", PATH, shop.merchant.jwt,
                               json={k: v for k, v in body.items() if v is not None})
    assert status == 400, answer
    assert answer["error"]["type"] == "validation" and field in answer["error"]["detail"], answer
    assert answer["data"] is None and answer["status"] == 400
    assert await links(shop) == []


async def test_coins_the_merchant_cannot_receive_are_refused(shop):
    status, body = await create(shop, coin="DOGE")  # not in the default accepted coins
    assert status == 400 and body["error"]["code"] == "currency_not_accepted"
    status, body = await create(shop, coin="XMR")
    assert status == 400 and body["error"]["code"] == "xmr_receive_unsupported"
    assert await links(shop) == []


async def test_auth_and_other_merchants_links(shop):
    link = await created(shop, amount="0.001")
    assert (await shop.client.get(PATH)).status == 401
    assert (await shop.client.post(PATH, json={"coin": "BTC"})).status == 401
    other = await signup(shop.client, "other@example.com")
    for method, path, body in (("PATCH", f"{PATH}/{link['id']}", {"enabled": False}),
                               ("GET", f"{PATH}/{link['id']}/embed", None)):
        status, answer = await api(shop.client, method, path, other.jwt, json=body)
        assert status == 404 and answer["error"]["type"] == "not_found", answer
    status, answer = await api(shop.client, "GET", PATH, other.jwt)
    assert answer["data"]["links"] == []
    assert (await links(shop))[0]["enabled"] is True


@pytest.mark.parametrize("body", [{}, {"enabled": "no"}, {"enabled": 1}])
async def test_patch_needs_a_boolean(shop, body):
    link = await created(shop)
    status, answer = await api(shop.client, "PATCH", f"{PATH}/{link['id']}", shop.merchant.jwt, json=body)
    assert status == 400 and "enabled" in answer["error"]["detail"]
    assert (await links(shop))[0]["enabled"] is True


async def test_embed_snippet(shop):
    link = await created(shop)
    status, body = await api(shop.client, "GET", f"{PATH}/{link['id']}/embed", shop.merchant.jwt)
    assert status == 200, body
    data = body["data"]
    assert data["slug"] == link["slug"] and data["url"] == link["url"] and data["label"] == "Donate crypto"
    base = shop.gateway.config.base_url
    assert f'<div class="orbchain-donate" data-slug="{link["slug"]}" data-label="Donate crypto"></div>' \
        in data["snippet"]
    assert f'<script src="{base}/assets/donate.js" async></script>' in data["snippet"]
    assert f'<a href="{link["url"]}"' in data["snippet"]  # the no-script fallback

    label = '"><script>alert(1)</script> Tip & <b>'
    status, body = await api(shop.client, "GET", f"{PATH}/{link['id']}/embed", shop.merchant.jwt,
                             params={"label": label})
    assert status == 200 and body["data"]["label"] == label.strip()
    snippet = body["data"]["snippet"]
    assert "<script>alert" not in snippet
    parser = TagCollector()
    parser.feed(snippet)  # a real HTML parser reads the label back intact, in the right place
    assert parser.tags[0] == ("div", {"class": "orbchain-donate", "data-slug": link["slug"], "data-label": label.strip()})
    assert [t for t, _ in parser.tags] == ["div", "noscript", "a", "script"]

    for bad in ("x" * 81, "   "):
        status, body = await api(shop.client, "GET", f"{PATH}/{link['id']}/embed", shop.merchant.jwt,
                                 params={"label": bad})
        assert status == 400 and "label" in body["error"]["detail"], body


async def test_link_count_is_bounded(shop, monkeypatch):
    from orbchain.plugins.links import routes_dashboard

    monkeypatch.setattr(routes_dashboard, "MAX_LINKS", 2)
    await created(shop)
    await created(shop)
    status, body = await create(shop)
    assert status == 400 and body["error"]["code"] == "too_many_links"
    assert len(await links(shop)) == 2


# -- resolving /l/{slug} ---------------------------------------------------------------------------


async def test_fixed_amount_link_mints_a_fresh_invoice_each_time(shop):
    link = await created(shop, amount="0.00125", lifetime=15, description="Coffee")
    first = await minted(shop, link["slug"])
    second = await minted(shop, link["slug"], {"amount": "99"})  # a fixed link ignores ?amount
    assert first["track_id"] != second["track_id"] and first["address"] != second["address"]
    for invoice in (first, second):
        assert invoice["type"] == "invoice" and invoice["status"] == "Waiting"
        assert invoice["currency"] == "BTC" and invoice["amount"] == "0.00125"
        assert invoice["pay_currency"] == "BTC" and invoice["pay_amount"] == "0.00125"
        assert invoice["accepted_coins"] == ["BTC"] and invoice["description"] == "Coffee"
        assert invoice["order_id"] == f"link:{link['slug']}"
        assert invoice["expires_at"] - invoice["created_at"] == 15 * 60
    assert (await links(shop))[0]["uses"] == 2
    assert set(await store.invoices_of(shop.gateway, link["id"])) == {first["track_id"], second["track_id"]}
    page = await shop.client.get(f"/pay/{first['track_id']}")
    assert page.status == 200 and "Coffee" in await page.text()


async def test_fiat_link_locks_the_rate_per_minted_invoice(shop):
    gateway = shop.gateway
    market = MovingPrices("60000")
    now = [gateway.now()]
    gateway.services["prices"] = PriceService(market, gateway.coins.names(), lambda: now[0])
    gateway.clock = lambda: now[0]
    link = await created(shop, amount_fiat="15", fiat_currency="EUR")
    first = await minted(shop, link["slug"])
    # 60000 USD per BTC at 0.5 EUR per USD: 30000 EUR per BTC; 15 EUR = 0.0005 BTC.
    assert first["amount_fiat"] == "15" and first["fiat_currency"] == "EUR" and first["rate_locked"] == "30000"
    assert first["pay_amount"] == "0.0005" and first["pay_currency"] == "BTC" and first["currency"] == "EUR"
    market.btc_usd = Decimal("40000")
    now[0] += 61  # past the 60 s price cache
    second = await minted(shop, link["slug"])
    assert second["rate_locked"] == "20000" and second["pay_amount"] == "0.00075"
    assert second["rate_locked_at"] == now[0] and first["rate_locked_at"] == now[0] - 61
    status, again = await api(shop.client, "GET", f"/v1/payment/{first['track_id']}", shop.merchant.merchant_key)
    assert again["data"]["pay_amount"] == "0.0005" and again["data"]["rate_locked"] == "30000"  # drift changes nothing


async def test_fiat_link_without_a_rate_is_503_and_counts_nothing(shop):
    gateway = shop.gateway
    link = await created(shop, amount_fiat="15", fiat_currency="EUR")
    gateway.services["prices"] = PriceService(MovingPrices("0"), gateway.coins.names(), gateway.now)
    response = await resolve(shop, link["slug"])
    assert response.status == 503 and response.content_type == "text/html"
    assert (await links(shop))[0]["uses"] == 0 and await payment_count(shop) == 0


async def test_buyer_entered_link_prompts_then_mints(shop):
    link = await created(shop, description="Tip jar <3")
    response = await resolve(shop, link["slug"])
    assert response.status == 200 and response.content_type == "text/html"
    page = await response.text()
    assert f'action="/l/{link["slug"]}"' in page and 'method="get"' in page and 'name="amount"' in page
    assert "Tip jar &lt;3" in page and "Amount in BTC" in page
    assert "script-src 'nonce-" in response.headers["Content-Security-Policy"]
    assert response.headers["Cache-Control"] == "no-store"

    for bad in ("abc", "0", "-1", "0.000000001", "1e999999", "9" * 41):
        response = await resolve(shop, link["slug"], {"amount": bad})
        assert response.status == 400, bad
        text = await response.text()
        assert 'id="amount-error"' in text and 'name="amount"' in text
    assert await payment_count(shop) == 0 and (await links(shop))[0]["uses"] == 0

    invoice = await minted(shop, link["slug"], {"amount": "0.5"})
    assert invoice["amount"] == "0.5" and invoice["pay_amount"] == "0.5" and invoice["currency"] == "BTC"
    assert (await links(shop))[0]["uses"] == 1


async def test_a_buyer_entered_price_is_refused_below_the_smallest_payment_or_finer_than_the_currency(shop):
    """Issue 42 item 8: what a payer types goes through the same minimums as the merchant's prices, and is told
    the minimum in the link's own currency; a yen price is whole yen."""
    usd = await created(shop, fiat_currency="USD")
    yen = await created(shop, fiat_currency="JPY")
    native = await created(shop)
    for slug, amount, problem in (
            (usd["slug"], "0.05", "The amount must be at least 0.60 USD at the current rate: a BTC payment must be"
                                  " at least 0.00001 BTC."),
            (usd["slug"], "1.005", "Use at most 2 decimals."),
            (yen["slug"], "150.5", "Use at most 0 decimals."),
            (native["slug"], "0.000001", "The amount must be at least 0.00001 BTC, the smallest payment BTC can"
                                         " receive.")):
        response = await resolve(shop, slug, {"amount": amount})
        text = await response.text()
        assert response.status == 400 and problem in text, (amount, text[:3000])
    assert await payment_count(shop) == 0
    assert (await minted(shop, usd["slug"], {"amount": "0.60"}))["pay_amount"] == "0.00001"
    assert (await minted(shop, yen["slug"], {"amount": "150"}))["amount_fiat"] == "150"


@pytest.mark.parametrize("amount, problem", [
    ("99999999999999999999999", "must be at most 21000000 BTC"),  # minted before issue 29
    ("1,5", "as the decimal separator"),  # read as 1.5 before
    (" 0.01", "must not contain spaces"),  # stripped before
    ("1e-3", "without an exponent"),
    ("+1", "without a plus sign"),
    ("9" * 400, "has too many digits"),
])
async def test_buyer_amounts_go_through_the_strict_parser_and_the_coins_maximum(shop, amount, problem):
    """Issue 29 item 8. Breaks caught: no upper bound on a payer's amount, and the page's own lenient
    reading (comma as the decimal point, surrounding spaces, exponents)."""
    link = await created(shop)
    response = await resolve(shop, link["slug"], {"amount": amount})
    assert response.status == 400, amount
    assert problem in await response.text()
    assert await payment_count(shop) == 0 and (await links(shop))[0]["uses"] == 0


async def test_a_buyer_fiat_amount_worth_more_than_the_coins_maximum_shows_the_form_again(shop):
    link = await created(shop, fiat_currency="USD")
    response = await resolve(shop, link["slug"], {"amount": "1" + "0" * 30})
    assert response.status == 400 and 'id="amount-error"' in (text := await response.text())
    assert "the most one payment may be" in text
    assert await payment_count(shop) == 0 and (await links(shop))[0]["uses"] == 0


async def test_buyer_entered_fiat_link(shop):
    link = await created(shop, fiat_currency="USD")
    page = await (await resolve(shop, link["slug"])).text()
    assert "Amount in USD" in page and "You pay in BTC (Bitcoin) at the rate" in page
    assert (await resolve(shop, link["slug"], {"amount": "1.005"})).status == 400  # cents, not less
    invoice = await minted(shop, link["slug"], {"amount": "30"})
    assert invoice["currency"] == "USD" and invoice["amount_fiat"] == "30" and invoice["pay_currency"] == "BTC"
    assert invoice["rate_locked"] is not None


async def test_disabled_unknown_and_malformed_links(shop):
    link = await created(shop, amount="0.001")
    await api(shop.client, "PATCH", f"{PATH}/{link['id']}", shop.merchant.jwt, json={"enabled": False})
    response = await resolve(shop, link["slug"])
    assert response.status == 410 and response.content_type == "text/html"
    assert "no longer active" in await response.text()
    for slug in ("zzzzzzzzzzzz", "short", "A" * 12, "x" * 500, "%3Cscript%3E"):
        response = await resolve(shop, slug)
        assert response.status == 404 and response.content_type == "text/html", slug
    assert (await shop.client.head(f"/l/{link['slug']}", allow_redirects=False)).status == 405
    assert await payment_count(shop) == 0 and (await links(shop))[0]["uses"] == 0


async def test_link_of_a_coin_no_longer_accepted(shop):
    link = await created(shop, amount="0.001")
    status, body = await api(shop.client, "PUT", "/dashboard/settings/coins", shop.merchant.jwt,
                             json={"accepted_coins": ["LTC"]})
    assert status == 200, body
    response = await resolve(shop, link["slug"])
    assert response.status == 400 and response.content_type == "text/html"
    assert await payment_count(shop) == 0 and (await links(shop))[0]["uses"] == 0


async def test_uses_are_counted_exactly_under_concurrency(shop):
    link = await created(shop, amount="0.001")
    responses = await asyncio.gather(*(resolve(shop, link["slug"]) for _ in range(20)))
    assert [r.status for r in responses] == [302] * 20
    track_ids = {r.headers["Location"][5:] for r in responses}
    assert len(track_ids) == 20
    assert (await links(shop))[0]["uses"] == 20
    assert set(await store.invoices_of(shop.gateway, link["id"])) == track_ids
    assert await payment_count(shop) == 20


async def test_disabling_while_minting_rolls_the_invoice_back(shop):
    """count_use refuses a link disabled after it was read: no invoice, no use."""
    gateway = shop.gateway
    link = await created(shop, amount="0.001")
    await api(shop.client, "PATCH", f"{PATH}/{link['id']}", shop.merchant.jwt, json={"enabled": False})

    async def count(payment):
        await store.count_use(gateway, link["id"], payment.track_id)

    with pytest.raises(Gone):
        await services.create_invoice(gateway, shop.merchant.merchant_id, amount=Decimal("0.001"), currency="BTC",
                                      coins=["BTC"], in_transaction=count)
    assert await payment_count(shop) == 0 and (await links(shop))[0]["uses"] == 0


async def test_one_visitor_cannot_mint_without_bound(make_config, make_client):
    shop = await open_shop(make_config, make_client, plugin={"links": {"mint_per_minute": 3}})
    shop.gateway.services["rate_limiter"] = MemoryRateLimiter(clock=lambda: 6_000_030.0)  # one frozen minute
    link = await created(shop, amount="0.001")
    open_link = await created(shop)
    for _ in range(3):
        assert (await resolve(shop, link["slug"])).status == 302
    refused = await resolve(shop, link["slug"])
    assert refused.status == 429 and refused.content_type == "text/html"
    assert int(refused.headers["Retry-After"]) > 0
    assert (await resolve(shop, open_link["slug"], {"amount": "1"})).status == 429  # the budget spans links
    assert (await resolve(shop, open_link["slug"])).status == 200  # the prompt mints nothing
    assert await payment_count(shop) == 3
    assert {row["id"]: row["uses"] for row in await links(shop)} == {link["id"]: 3, open_link["id"]: 0}


async def test_link_pages_are_rate_limited_per_ip(make_config, make_client):
    shop = await open_shop(make_config, make_client, rate_limits={"public_page_per_minute": 3})
    shop.gateway.services["rate_limiter"] = MemoryRateLimiter(clock=lambda: 6_000_030.0)  # one frozen minute
    link = await created(shop)
    assert [(await resolve(shop, link["slug"])).status for _ in range(4)] == [200, 200, 200, 429]


async def test_disabled_merchant_mints_nothing(shop):
    link = await created(shop, amount="0.001")
    await shop.gateway.db.execute("UPDATE merchants SET enabled = :f WHERE id = :m",
                                  {"f": False, "m": shop.merchant.merchant_id})
    response = await resolve(shop, link["slug"])
    assert response.status == 403 and response.content_type == "text/html"
    assert (await store.get(shop.gateway, shop.merchant.merchant_id, link["id"]))["uses"] == 0


# -- donate.js and the plugin's configuration --------------------------------------------------------


async def test_donate_js_is_served_small_and_cacheable(shop):
    response = await shop.client.get("/assets/donate.js")
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/javascript")
    assert response.headers["Cache-Control"] == "public, max-age=3600"
    assert response.headers["Cross-Origin-Resource-Policy"] == "cross-origin"
    assert "ETag" in response.headers or "Last-Modified" in response.headers
    body = await response.read()
    assert len(body) < 5 * 1024 and b"import " not in body and b"require(" not in body
    again = await shop.client.get("/assets/donate.js", headers={"If-Modified-Since": response.headers["Last-Modified"]})
    assert again.status == 304


@pytest.mark.parametrize("block, key", [
    ({"mint_per_minute": -1}, "mint_per_minute"),
    ({"mint_per_minute": "10"}, "mint_per_minute"),
    ({"mint_per_minute": True}, "mint_per_minute"),
    ({"mint_per_mintue": 5}, "mint_per_mintue"),
])
def test_bad_config_names_the_key(block, key):
    with pytest.raises(ConfigError, match=f"plugin.links.{key}"):
        parse_settings(block)


def test_default_config():
    assert parse_settings({}).mint_per_minute == 10


# -- the core services the plugins use ---------------------------------------------------------------


async def test_invoice_service_and_merchant_lookup(shop):
    gateway, merchant_id = shop.gateway, shop.merchant.merchant_id
    record = await services.merchant_record(gateway, merchant_id)
    assert await services.merchant_by_account_id(gateway, record.account_id) == record and record.enabled
    assert await services.merchant_by_account_id(gateway, "nobody") is None
    assert services.receivable_coins(gateway, record)[0] == record.accepted_coins[0]
    seen = []

    async def note(payment):
        seen.append(payment.track_id)

    invoice = await services.create_invoice(gateway, merchant_id, amount=Decimal("0.25"), currency="LTC",
                                            coins=["LTC", "BTC"], lifetime_minutes=5, order_id="o-1", in_transaction=note)
    assert seen == [invoice.track_id] and invoice.pay_currency == "LTC" and invoice.pay_amount == 25_000_000
    assert invoice.payment_url == f"{gateway.config.base_url}/pay/{invoice.track_id}" and invoice.amount == "0.25"
    assert invoice.amount_fiat is None and invoice.rate_locked is None

    async def fail(payment):
        raise RuntimeError("plugin bookkeeping failed")

    with pytest.raises(RuntimeError):
        await services.create_invoice(gateway, merchant_id, amount=Decimal("1"), currency="LTC", coins=["LTC"],
                                      in_transaction=fail)
    assert await payment_count(shop) == 1  # the failed one rolled back


# -- who is asking (issue 29 item 5): previews mint nothing, a browser finds its open invoice -----


@pytest.mark.parametrize("headers", [
    {"User-Agent": "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"},
    {"User-Agent": "TelegramBot (like TwitterBot)"},
    {"User-Agent": "WhatsApp/2.23.20.0 A"},
    {"User-Agent": "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"},
    {"User-Agent": "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)"},
    {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/126.0", "Sec-Purpose": "prefetch"},
])
async def test_link_previews_and_prefetches_mint_nothing(shop, headers):
    """Break caught: ``GET /l/<slug>`` minted an invoice (an address, a use) for every chat app unfurling the
    link. A preview gets a page naming the link, whose "Continue" link mints for whoever follows it."""
    link = await created(shop, amount="0.001", description="Coffee")
    buyer = await created(shop)
    response = await resolve(shop, link["slug"], headers=headers)
    page = await response.text()
    assert response.status == 200 and 'id="link-amount"' in page and "0.001 BTC" in page and "Coffee" in page
    assert f'href="/l/{link["slug"]}?continue=1"' in page
    prompt = await resolve(shop, buyer["slug"], {"amount": "0.5"}, headers=headers)  # a prefilled donate link
    assert prompt.status == 200 and 'value="0.5"' in await prompt.text()
    assert await payment_count(shop) == 0 and {row["uses"] for row in await links(shop)} == {0}
    invoice = await minted(shop, link["slug"], {"continue": "1"}, headers=headers)  # a person chose to pay
    assert invoice["amount"] == "0.001" and (await links(shop))[-1]["uses"] == 1


async def test_the_same_browser_gets_its_open_invoice_again(shop):
    """Break caught: every reload or back-and-forth minted another invoice. The cookie is the visitor's:
    another visitor (another jar) gets a new one, and a paid invoice is not offered again."""
    link = await created(shop, amount="0.001")
    first = await minted(shop, link["slug"])
    again = await resolve(shop, link["slug"], same_browser=True)
    assert again.status == 302 and again.headers["Location"] == f"/pay/{first['track_id']}"
    assert (await links(shop))[0]["uses"] == 1
    cookie = again.request_info.headers.get("Cookie", "")
    assert f"orb_l_{link['slug']}={first['track_id']}" in cookie
    other = await minted(shop, link["slug"])  # a new visitor
    assert other["track_id"] != first["track_id"]
    devnet = Devnet(shop.client)
    await devnet.pay("BTC", other["address"], "0.001")
    await devnet.mine(2)
    after_paying = await minted(shop, link["slug"], same_browser=True)  # paid: a repeat purchase is new
    assert after_paying["track_id"] not in (first["track_id"], other["track_id"])
    assert (await links(shop))[0]["uses"] == 3


async def test_a_cookie_naming_anything_but_this_links_open_invoice_is_ignored(shop):
    link = await created(shop, amount="0.001")
    other_link = await created(shop, amount="0.002")
    foreign = await minted(shop, other_link["slug"])
    status, api_invoice = await api(shop.client, "POST", "/v1/payment/invoice", shop.merchant.merchant_key,
                                    json={"amount": "0.003", "currency": "BTC"})
    for value in (foreign["track_id"], api_invoice["data"]["track_id"], "x" * 500, "'; DROP TABLE x;--"):
        shop.client.session.cookie_jar.clear()
        shop.client.session.cookie_jar.update_cookies({f"orb_l_{link['slug']}": value})
        response = await resolve(shop, link["slug"], same_browser=True)
        assert response.status == 302 and response.headers["Location"] not in (
            f"/pay/{foreign['track_id']}", f"/pay/{api_invoice['data']['track_id']}"), value
    assert (await links(shop))[1]["uses"] == 4
