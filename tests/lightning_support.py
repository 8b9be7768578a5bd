"""Steps the Lightning tests share (LND stand-in and devnet node alike): a BTC_LN payment, its view, the balance."""

from __future__ import annotations

import asyncio
from typing import Any

from orbchain.core.contract.plugins import hookimpl
from orbchain.testing.fixtures import open_shop

from .support import api


async def lightning_shop(make_config: Any, make_client: Any, **config: Any) -> Any:
    """A shop (``open_shop`` with ``config``) whose merchant accepts BTC and BTC_LN, webhooks to a dead port."""
    shop = await open_shop(make_config, make_client, **config)
    status, body = await api(shop.client, "PUT", "/dashboard/settings/coins", shop.merchant.jwt,
                             json={"accepted_coins": ["BTC", "BTC_LN"]})
    assert status == 200, body
    status, body = await api(shop.client, "PUT", "/dashboard/settings/webhook", shop.merchant.jwt,
                             json={"webhook_url": "http://127.0.0.1:9/hook"})
    assert status == 200, body
    return shop


async def create_payment(shop: Any, amount: str = "0.0001", kind: str = "white-label") -> dict[str, Any]:
    """A BTC_LN payment of ``amount`` (``kind``: white-label or invoice), 30 minutes to pay; its data."""
    status, body = await api(shop.client, "POST", f"/v1/payment/{kind}", shop.merchant.merchant_key,
                             json={"currency": "BTC_LN", "amount": amount, "lifetime": 30})
    assert status == 200, body
    return body["data"]


async def payment(shop: Any, track_id: str) -> dict[str, Any]:
    return (await api(shop.client, "GET", f"/v1/payment/{track_id}", shop.merchant.merchant_key))[1]["data"]


async def balance(shop: Any) -> str:
    """The merchant's BTC_LN balance as the API shows it ("0" when none)."""
    body = (await api(shop.client, "GET", "/v1/general/account/balance", shop.merchant.general_key))[1]
    return {b["coin"]: b["amount"] for b in body["data"]["balances"]}.get("BTC_LN", "0")


class PaidListener:
    """A plugin registered on a running gateway: an event per track id, set by ``payment_paid``."""

    def __init__(self) -> None:
        self._paid: dict[str, asyncio.Event] = {}

    def event(self, track_id: str) -> asyncio.Event:
        return self._paid.setdefault(track_id, asyncio.Event())

    @hookimpl
    def payment_paid(self, gateway: Any, payment: Any) -> None:
        self.event(payment.track_id).set()


def listen_for_paid(shop: Any) -> PaidListener:
    listener = PaidListener()
    shop.gateway.pm.register(listener, name=f"paid-listener-{id(listener)}")
    return listener


async def until_paid(listener: PaidListener, track_id: str, within: float = 30.0) -> None:
    """Return once ``payment_paid`` fired for ``track_id``; ``within`` only catches a hang."""
    await asyncio.wait_for(listener.event(track_id).wait(), within)
