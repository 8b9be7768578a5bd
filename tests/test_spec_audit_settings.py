"""SPEC 4.8 conformance: every confirmation minimum and customer-static-mode's addresses, on both databases.

The per-route tests (test_dashboard_settings.py) cover the envelope and a
couple of floors; these walk every coin SPEC names and the behavior the
static-mode switch promises for invoices.
"""

from __future__ import annotations

import pytest

from orbchain.core.payments.status import expire_payments
from orbchain.testing.fixtures import open_shop

from .support import api

# SPEC 4.8: "minimums: BTC 2, LTC 6, ETH 12, USDT_ERC20 12, USDT_TRC20 3, SOL 32"; 2.7 gives the other floors.
MINIMUMS = {"BTC": 2, "LTC": 6, "ETH": 12, "USDT_ERC20": 12, "USDT_TRC20": 3, "SOL": 32,
            "DOGE": 6, "USDC_ERC20": 12, "SHIB": 12, "DAI": 12, "BNB": 15, "USDT_BEP20": 15, "USDC_BEP20": 15,
            "POL": 30, "USDT_POL": 30, "USDC_POL": 30, "TRX": 3, "USDC_TRC20": 3}
CONFIRMATIONS, STATIC_MODE = "/dashboard/settings/confirmations", "/dashboard/settings/customer-static-mode"


@pytest.fixture
async def shop(make_config, make_client):
    return await open_shop(make_config, make_client)


@pytest.mark.parametrize("coin, minimum", sorted(MINIMUMS.items()))
async def test_each_confirmation_minimum_is_the_floor(shop, coin, minimum):
    status, body = await api(shop.client, "PUT", "/dashboard/settings/coins", shop.merchant.jwt,
                             json={"accepted_coins": [coin]})  # the account shows accepted coins only
    assert status == 200, body
    status, body = await api(shop.client, "PUT", CONFIRMATIONS, shop.merchant.jwt, json={coin: minimum - 1})
    assert status == 400 and body["data"] is None and coin in body["error"]["detail"], body
    status, body = await api(shop.client, "PUT", CONFIRMATIONS, shop.merchant.jwt, json={coin: minimum})
    assert status == 200 and body["data"]["account"]["confirmations"][coin] == minimum, body


async def invoice_address(shop, **fields):
    body = {"currency": "BTC", "amount": "0.001", **fields}
    status, answer = await api(shop.client, "POST", "/v1/payment/white-label", shop.merchant.merchant_key, json=body)
    assert status == 200, answer
    return answer["data"]["address"]


async def set_static_mode(shop, enabled):
    status, body = await api(shop.client, "PUT", STATIC_MODE, shop.merchant.jwt, json={"enabled": enabled})
    assert status == 200 and body["data"]["account"]["customer_static_mode"] is enabled, body


async def test_static_mode_on_gives_a_user_the_same_address_with_no_expiry(shop):
    await set_static_mode(shop, True)
    first = await invoice_address(shop, user_id="customer-1", lifetime=1)
    assert await invoice_address(shop, user_id="customer-1") == first
    gateway = shop.gateway
    later = gateway.now() + 3 * 3600
    gateway.clock = lambda: later
    assert await expire_payments(gateway) >= 1  # the invoice expires; the customer's address does not
    assert await invoice_address(shop, user_id="customer-1") == first
    assert await invoice_address(shop, user_id="customer-2") != first
    assert await invoice_address(shop) != first  # no user_id: a fresh address as always


async def test_static_mode_off_by_default_derives_a_fresh_address_per_invoice(shop):
    status, body = await api(shop.client, "GET", "/dashboard/account", shop.merchant.jwt)
    assert status == 200 and body["data"]["account"]["customer_static_mode"] is False
    first = await invoice_address(shop, user_id="customer-1", lifetime=1)
    gateway = shop.gateway
    later = gateway.now() + 3 * 3600
    gateway.clock = lambda: later
    await expire_payments(gateway)
    assert await invoice_address(shop, user_id="customer-1") != first
    await set_static_mode(shop, True)
    await set_static_mode(shop, False)
    assert len({await invoice_address(shop, user_id="customer-1") for _ in range(2)}) == 2
