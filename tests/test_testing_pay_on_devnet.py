"""``orbchain.testing.pay_on_devnet``, used the way a plugin's own test suite uses it.

This module imports only ``orbchain.testing`` and the documented plugin API
(``hookimpl``, ``get_plugin_manager``): nothing from ``tests.*``, so a plugin
package can copy it as it stands (docs/plugins.md, "Testing your plugin").
"""

from __future__ import annotations

import pytest

from orbchain.api import get_plugin_manager, hookimpl
from orbchain.testing import api, pay_on_devnet, signup


async def white_label(shop, amount: str = "0.001", currency: str = "BTC") -> dict:
    status, body = await api(shop.client, "POST", "/v1/payment/white-label", shop.merchant.merchant_key,
                             json={"currency": currency, "amount": amount})
    assert status == 200, body
    return body["data"]


async def shown(shop, track_id: str) -> dict:
    status, body = await api(shop.client, "GET", f"/v1/payment/{track_id}", shop.merchant.merchant_key)
    assert status == 200, body
    return body["data"]


async def test_a_payment_paid_and_confirmed(merchant_shop):
    payment = await white_label(merchant_shop)
    paid = await pay_on_devnet(merchant_shop.client, payment)
    assert (paid.track_id, paid.status, paid.is_open) == (payment["track_id"], "Paid", False)
    view = await shown(merchant_shop, payment["track_id"])
    assert view["status"] == "Paid" and [t["status"] for t in view["transactions"]] == ["CREDITED"]


async def test_in_the_mempool_only_and_underpaid(merchant_shop):
    waiting = await white_label(merchant_shop)
    assert (await pay_on_devnet(merchant_shop.client, waiting, confirm=False)).status == "Paying"
    assert (await shown(merchant_shop, waiting["track_id"]))["transactions"][0]["status"] == "PENDING"

    short = await white_label(merchant_shop, "0.002")
    underpaid = await pay_on_devnet(merchant_shop.gateway, short["track_id"], "0.001")  # a gateway and a track id
    assert underpaid.status == "Paying"
    view = await shown(merchant_shop, short["track_id"])
    assert [(t["amount"], t["status"]) for t in view["transactions"]] == [("0.001", "CREDITED")]
    rest = await pay_on_devnet(merchant_shop.client, short, 100_000)  # base units: the missing 0.001 BTC
    assert rest.status == "Paid"


async def test_refuses_what_it_cannot_pay(merchant_shop):
    with pytest.raises(LookupError, match="no payment nope"):
        await pay_on_devnet(merchant_shop.client, "nope")
    with pytest.raises(TypeError, match="test client of an Orbchain app or a Gateway"):
        await pay_on_devnet(object(), "nope")
    with pytest.raises(TypeError, match="base units"):
        await pay_on_devnet(merchant_shop.client, await white_label(merchant_shop), 0.001)


class PaidCounter:
    """A feature plugin under test: it counts the payments it is told were paid."""

    PLUGIN_NAME = "paid_counter"

    def __init__(self) -> None:
        self.paid: list[str] = []

    @hookimpl
    def payment_paid(self, payment):
        self.paid.append(payment.track_id)


async def test_a_feature_plugin_hears_of_the_payment(make_client, make_config):
    counter = PaidCounter()
    client = await make_client(make_config(scheduler={"enabled": False}), get_plugin_manager([counter]))
    merchant = await signup(client)
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "LTC", "amount": "0.5"})
    assert status == 200, body
    await pay_on_devnet(client, body["data"])
    assert counter.paid == [body["data"]["track_id"]]


async def test_the_devnet_must_be_on(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, plugin={"devnet": {"enabled": False}}))
    with pytest.raises(RuntimeError, match="the devnet is off"):
        await pay_on_devnet(client, "any")
