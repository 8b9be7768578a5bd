"""Talking to a gateway under test the way a merchant does: sign up, call the API.

Shared by Orbchain's own tests (``tests/support.py`` re-exports these) and
by the conformance suite, so a third-party test sees exactly the client a
merchant integration sees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Merchant:
    """A signed-up merchant: its dashboard token, id and the three API keys."""

    token: str
    merchant_id: str
    keys: dict[str, str]

    @property
    def jwt(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    @property
    def merchant_key(self) -> dict[str, str]:
        return {"merchant_api_key": self.keys["merchant_api_key"]}

    @property
    def payout_key(self) -> dict[str, str]:
        return {"payout_api_key": self.keys["payout_api_key"]}

    @property
    def general_key(self) -> dict[str, str]:
        return {"general_api_key": self.keys["general_api_key"]}


async def signup_data(client: Any, email: str = "owner@example.com", password: str = "s3cret-pass",
                      **extra: Any) -> dict[str, Any]:
    """Sign up through the API; the raw ``data`` of the answer."""
    response = await client.post("/dashboard/auth/signup", json={"email": email, "password": password, **extra})
    assert response.status == 200, await response.text()
    return (await response.json())["data"]


async def signup(client: Any, email: str = "merchant@example.com", password: str = "s3cret-pass") -> Merchant:
    data = await signup_data(client, email, password)
    return Merchant(data["token"], data["merchant_id"], data["api_keys"])


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def api(client: Any, method: str, path: str, headers: dict[str, str], **kwargs: Any) -> tuple[int, Any]:
    """One request; ``(status, parsed JSON body)``."""
    response = await client.request(method, path, headers=headers, **kwargs)
    return response.status, await response.json()


async def create_payment(client: Any, merchant: Merchant, currency: str, amount: str) -> dict[str, Any]:
    """A white-label payment through the merchant API (must succeed); its ``data``."""
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": currency, "amount": amount})
    assert status == 200, body
    return body["data"]


async def view_payment(client: Any, merchant: Merchant, track_id: str) -> dict[str, Any]:
    """A payment as the merchant API shows it (must succeed); its ``data``."""
    status, body = await api(client, "GET", f"/v1/payment/{track_id}", merchant.merchant_key)
    assert status == 200, body
    return body["data"]
