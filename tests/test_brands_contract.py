"""The three generic hooks brands use, served by a throwaway third-party plugin (brands blocked).

``decide_key_brand_allowed`` (a key may carry only a brand some plugin vouches
for), ``decide_webhook_destination`` (a payment's webhooks routed and signed by a
plugin) and ``decide_page_branding`` (a hosted page dressed by a plugin): none of
them needs the built-in ``brands`` plugin, which is what makes them a
contract and not a private door.
"""

from __future__ import annotations

import hashlib
import hmac

import pytest

from orbchain.core.events.key_destination import WebhookDestination
from orbchain.core.types.pages import PageBranding
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl
from orbchain.core.events.webhooks import deliver_due

from .support import Devnet, WebhookReceiver, api, signup

SECRET = "third-party-secret-0123456789"


class ThirdPartyBrands:
    """Knows exactly one brand, ``tp_brand``, of any merchant; records what it was asked."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.seen: list[tuple[str, object]] = []

    @hookimpl
    def decide_key_brand_allowed(self, merchant_id, brand_id):
        return brand_id == "tp_brand"

    @hookimpl
    async def decide_webhook_destination(self, merchant_id, brand_id, payment):
        self.seen.append(("webhook", payment.brand_id))
        return WebhookDestination(url=self.url, secret=SECRET) if brand_id == "tp_brand" else None

    @hookimpl
    def decide_page_branding(self, merchant_id, brand_id, payment):
        self.seen.append(("page", brand_id))
        return PageBranding(name="TP", brand_color="#abcdef", theme_mode="DARK") if brand_id == "tp_brand" else None


@pytest.fixture
async def receiver():
    hook = WebhookReceiver()
    yield hook
    await hook.close()


async def _app(make_client, make_config, plugins=()):
    pm = get_plugin_manager(blocked=["brands"], plugins=list(plugins))
    client = await make_client(make_config(scheduler={"enabled": False}), pm)
    return client, await signup(client, "tp@example.com")


async def test_without_a_brands_plugin_a_key_cannot_name_a_brand(make_client, make_config):
    client, merchant = await _app(make_client, make_config)
    status, body = await api(client, "POST", "/dashboard/api-keys", merchant.jwt,
                             json={"label": "k", "scopes": ["payment:create"], "brand_id": "tp_brand"})
    assert status == 400 and "brand_id" in body["error"]["detail"]
    assert (await api(client, "GET", "/dashboard/brands", merchant.jwt))[0] == 404  # the routes left with it


async def test_a_third_party_plugin_brands_keys_webhooks_and_pages(make_client, make_config, receiver):
    plugin = ThirdPartyBrands(await receiver.start())
    client, merchant = await _app(make_client, make_config, [("tp_brands", plugin)])
    status, body = await api(client, "POST", "/dashboard/api-keys", merchant.jwt,
                             json={"label": "k", "scopes": ["payment:create"], "brand_id": "other"})
    assert status == 400  # decide_key_brand_allowed answered False
    status, body = await api(client, "POST", "/dashboard/api-keys", merchant.jwt,
                             json={"label": "k", "scopes": ["payment:create"], "brand_id": "tp_brand"})
    assert status == 200, body
    status, body = await api(client, "POST", "/v1/payment/invoice", {"merchant_api_key": body["data"]["api_key"]},
                             json={"amount": "0.01", "currency": "BTC"})
    assert status == 200 and body["data"]["brand_id"] == "tp_brand"
    payment = body["data"]

    page = await client.get(f"/pay/{payment['track_id']}")
    html = await page.text()
    assert 'class="theme-dark"' in html and "/assets/accent/abcdef.css" in html
    assert ("page", "tp_brand") in plugin.seen

    devnet = Devnet(client)
    await devnet.pay("BTC", payment["address"], payment["pay_amount"])
    await devnet.mine(2)
    await deliver_due(devnet.gateway)
    assert {"payment.paid", "deposit.credited"} <= {r["body"]["event_type"] for r in receiver.requests}
    for request in receiver.requests:  # the merchant set no webhook at all: the plugin's URL and secret
        expected = hmac.new(SECRET.encode(), request["raw"], hashlib.sha512).hexdigest()
        assert hmac.compare_digest(expected, request["headers"]["HMAC"])
    assert ("webhook", "tp_brand") in plugin.seen  # the PaymentView carries brand_id
