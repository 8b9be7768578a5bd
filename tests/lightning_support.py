"""Steps the Lightning tests share (LND stand-in and devnet node alike): a BTC_LN payment, its view, the balance."""

from __future__ import annotations

from typing import Any

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
