"""The tip page (plugins/tips, SPEC 4.14, 8), on both databases: GET renders, POST mints."""

from __future__ import annotations

import pytest

from orbchain.core.infra.ratelimit import MemoryRateLimiter
from orbchain.testing.fixtures import open_shop

from .support import api


@pytest.fixture
async def shop(make_config, make_client):
    return await open_shop(make_config, make_client)


async def account_id(shop):
    status, body = await api(shop.client, "GET", "/dashboard/account", shop.merchant.jwt)
    assert status == 200, body
    return body["data"]["account"]["account_id"]


async def accepted(shop):
    status, body = await api(shop.client, "GET", "/v1/payment/accepted-currencies", shop.merchant.merchant_key)
    return body["data"]["accepted_coins"]


async def payment_count(shop):
    _, body = await api(shop.client, "GET", "/v1/payment", shop.merchant.merchant_key)
    return body["data"]["total"]


def selected(page: str) -> list[str]:
    return [part.split('"')[0] for part in page.split('<option value="')[1:] if '" selected>' in part[:40]]


def options(page: str) -> list[str]:
    return [part.split('"')[0] for part in page.split('<option value="')[1:]]


async def test_page_offers_the_merchants_coins(shop):
    account = await account_id(shop)
    coins = await accepted(shop)
    response = await shop.client.get(f"/tip/{account}")
    assert response.status == 200 and response.content_type == "text/html"
    page = await response.text()
    assert options(page) == coins and selected(page) == [coins[0]]
    assert f'action="/tip/{account}"' in page and 'method="post"' in page and "<script" not in page
    assert "default-src 'none'" in response.headers["Content-Security-Policy"]


async def test_query_coin_is_honoured_only_when_accepted(shop):
    account = await account_id(shop)
    coins = await accepted(shop)
    later = coins[-1]
    assert selected(await (await shop.client.get(f"/tip/{account}", params={"coin": later.lower()})).text()) == [later]
    for ignored in ("DOGE", "XMR", "NOPE", "<b>", "x" * 300):
        response = await shop.client.get(f"/tip/{account}", params={"coin": ignored})
        assert response.status == 200
        assert selected(await response.text()) == [coins[0]], ignored


async def test_tip_mints_an_invoice_in_the_chosen_coin(shop):
    account = await account_id(shop)
    response = await shop.client.post(f"/tip/{account}", data={"coin": "LTC", "amount": "0.25"},
                                      allow_redirects=False)
    assert response.status == 303, await response.text()
    track_id = response.headers["Location"].removeprefix("/pay/")
    status, body = await api(shop.client, "GET", f"/v1/payment/{track_id}", shop.merchant.merchant_key)
    invoice = body["data"]
    assert invoice["type"] == "invoice" and invoice["currency"] == "LTC" and invoice["pay_currency"] == "LTC"
    assert invoice["amount"] == "0.25" and invoice["pay_amount"] == "0.25" and invoice["accepted_coins"] == ["LTC"]
    assert invoice["order_id"] == "tip"
    page = await shop.client.get(response.headers["Location"])
    assert page.status == 200 and invoice["address"] in await page.text()


@pytest.mark.parametrize("form, message", [
    ({"coin": "DOGE", "amount": "1"}, "Choose one of the coins"),
    ({"coin": "XMR", "amount": "1"}, "Choose one of the coins"),
    ({"amount": "1"}, "Choose one of the coins"),
    ({"coin": "BTC", "amount": "0"}, "greater than 0"),
    ({"coin": "BTC", "amount": "-1"}, "greater than 0"),
    ({"coin": "BTC", "amount": "abc"}, "must be a decimal string"),
    ({"coin": "BTC", "amount": "0.000000001"}, "more than 8 decimal places"),
    ({"coin": "BTC", "amount": "1e999999"}, "without an exponent"),
    ({"coin": "BTC"}, "must not be empty"),
    # Issue 29 item 8. Breaks caught: a 400-digit amount was cut to 40 digits and minted (1.1e39 BTC);
    # "1,5" was read as 1.5 and " 0.01" stripped; no upper bound.
    ({"coin": "BTC", "amount": "1" * 400}, "has too many digits"),
    ({"coin": "BTC", "amount": "1" * 40}, "must be at most 21000000 BTC"),
    ({"coin": "BTC", "amount": "21000000.00000001"}, "must be at most 21000000 BTC"),
    ({"coin": "BTC", "amount": "1,5"}, "as the decimal separator"),
    ({"coin": "BTC", "amount": " 0.01"}, "must not contain spaces"),
    # Issue 42 item 8. Break caught: a tip below BTC's dust floor was minted (an invoice no wallet can pay).
    ({"coin": "BTC", "amount": "0.000009"},
     "The amount must be at least 0.00001 BTC, the smallest payment BTC can receive."),
])
async def test_bad_tips_show_the_form_again_and_mint_nothing(shop, form, message):
    account = await account_id(shop)
    response = await shop.client.post(f"/tip/{account}", data=form, allow_redirects=False)
    assert response.status == 400 and response.content_type == "text/html"
    page = await response.text()
    assert 'id="tip-error"' in page and message in page and 'name="amount"' in page
    assert await payment_count(shop) == 0


async def test_unknown_and_disabled_accounts(shop):
    for account in ("OC-nope", "x" * 200, "%3Cb%3E"):
        assert (await shop.client.get(f"/tip/{account}")).status == 404
        assert (await shop.client.post(f"/tip/{account}", data={"coin": "BTC", "amount": "1"})).status == 404
    account = await account_id(shop)
    await shop.gateway.db.execute("UPDATE merchants SET enabled = :f WHERE id = :m",
                                  {"f": False, "m": shop.merchant.merchant_id})
    assert (await shop.client.get(f"/tip/{account}")).status == 404
    assert (await shop.client.post(f"/tip/{account}", data={"coin": "BTC", "amount": "1"})).status == 404
    assert await shop.gateway.db.fetch_val("SELECT COUNT(*) FROM payments") == 0


async def test_a_json_body_is_not_a_form(shop):
    account = await account_id(shop)
    response = await shop.client.post(f"/tip/{account}", json={"coin": "BTC", "amount": "1"})
    assert response.status == 400 and await payment_count(shop) == 0


async def test_tip_page_is_limited_to_60_per_minute_per_ip(make_config, make_client):
    shop = await open_shop(make_config, make_client)
    account = await account_id(shop)
    # One frozen minute: a window boundary mid-test would reset the count.
    shop.gateway.services["rate_limiter"] = MemoryRateLimiter(clock=lambda: 6_000_030.0)
    statuses = [(await shop.client.get(f"/tip/{account}")).status for _ in range(61)]
    assert statuses == [200] * 60 + [429]
    refused = await shop.client.get(f"/tip/{account}")
    assert refused.status == 429 and refused.content_type == "text/html" and int(refused.headers["Retry-After"]) > 0


async def test_one_visitor_cannot_mint_tips_without_bound(make_config, make_client):
    shop = await open_shop(make_config, make_client, plugin={"tips": {"mint_per_minute": 2}})
    shop.gateway.services["rate_limiter"] = MemoryRateLimiter(clock=lambda: 6_000_030.0)  # one frozen minute
    account = await account_id(shop)
    statuses = [(await shop.client.post(f"/tip/{account}", data={"coin": "BTC", "amount": "0.01"},
                                        allow_redirects=False)).status for _ in range(3)]
    assert statuses == [303, 303, 429]
    assert await payment_count(shop) == 2
