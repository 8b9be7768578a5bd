"""SPEC 7 "maintenance: all write operations rejected" on the public GET that writes: GET /l/:slug mints an invoice.

The middleware refuses every POST/PUT/PATCH/DELETE; resolving a payment
link is a GET that creates a payment, so it must refuse by itself. The
amount prompt of a buyer-entered link writes nothing and stays up. Both
databases.
"""

from __future__ import annotations

import pytest

from orbchain.testing.fixtures import open_shop

from .support import api

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


async def test_resolving_a_link_mints_nothing_in_maintenance(shop):
    fixed = await make_link(shop, amount="0.001")
    open_amount = await make_link(shop)
    shop.gateway.maintenance = True
    for slug, query in ((fixed["slug"], {}), (open_amount["slug"], {"amount": "0.002"})):
        response = await shop.client.get(f"/l/{slug}", params=query, allow_redirects=False)
        assert response.status == 503 and response.content_type == "text/html", slug
        assert "Temporarily unavailable" in await response.text()
    prompt = await shop.client.get(f"/l/{open_amount['slug']}", allow_redirects=False)
    assert prompt.status == 200  # the amount prompt only reads
    shop.gateway.maintenance = False
    assert await payment_count(shop) == 0
    [listed_open, listed_fixed] = (await api(shop.client, "GET", LINKS, shop.merchant.jwt))[1]["data"]["links"]
    assert (listed_fixed["uses"], listed_open["uses"]) == (0, 0)
    assert (await shop.client.get(f"/l/{fixed['slug']}", allow_redirects=False)).status == 302
