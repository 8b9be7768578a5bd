"""A browser without JavaScript, at the HTTP level: the dashboard's cookie jar, its forms and their CSRF tokens."""

from __future__ import annotations

import html
import re
from typing import Any

from .support import Devnet

CSRF = re.compile(r'name="csrf_token" value="([^"]*)"')
PASSWORD = "correct horse battery"


REVIEW = re.compile(r'name="review_token" value="([^"]*)"')


def review_token(page: str) -> str:
    """The sealed review a payout's review page carries to its confirm."""
    found = REVIEW.search(page)
    assert found, "the page is not a payout review"
    return html.unescape(found.group(1))


def csrf_of(page: str) -> str:
    """The CSRF token of the first form on ``page`` (every form of a page carries the same one)."""
    found = CSRF.search(page)
    assert found, "the page has no form with a CSRF token"
    return html.unescape(found.group(1))


class Visitor:
    """One browser: GETs pages, submits forms with the token the page carried, never follows redirects."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.page = ""

    async def get(self, path: str, expect: int = 200) -> str:
        response = await self.client.get(path, allow_redirects=False)
        self.page = await response.text()
        assert response.status == expect, f"GET {path}: {response.status} {self.page[:500]}"
        return self.page

    async def submit(self, path: str, fields: dict[str, Any] | None = None, *, expect: int = 303,
                     token: str | None = None) -> Any:
        """POST a form with the token of the last page seen (or ``token``); returns the response."""
        data = {"csrf_token": csrf_of(self.page) if token is None else token, **(fields or {})}
        response = await self.client.post(path, data=data, allow_redirects=False)
        text = await response.text()
        assert response.status == expect, f"POST {path}: {response.status} {text[:800]}"
        if not 300 <= response.status < 400:
            self.page = text
        return response

    async def sign_up(self, email: str, password: str = PASSWORD) -> dict[str, str]:
        """Create an account from the sign-up page; returns the three API keys the welcome page showed once."""
        await self.get("/app/signup")
        await self.submit("/app/signup", {"email": email, "password": password}, expect=200)
        keys = dict(re.findall(r'<code class="secret" id="(\w+_api_key)"[^>]*>([^<]+)</code>', self.page))
        assert set(keys) == {"merchant_api_key", "payout_api_key", "general_api_key"}, self.page[:800]
        return keys

    async def sign_in(self, email: str, password: str = PASSWORD, code: str | None = None) -> None:
        """Sign in from the sign-in page; with ``code``, the person has 2FA on and types it on the next page."""
        await self.get("/app/login")
        response = await self.submit("/app/login", {"email": email, "password": password})
        if code is not None:
            assert response.headers["Location"] == "/app/login/code"
            await self.get("/app/login/code")
            response = await self.submit("/app/login/code", {"totp_code": code})
        assert response.headers["Location"] == "/app"


async def paid_invoice(client: Any, visitor: Visitor, amount: str = "0.01", coin: str = "BTC") -> str:
    """An invoice created on the dashboard, paid on the devnet and seen Paid; returns its track id."""
    await visitor.get("/app/payments/new")
    response = await visitor.submit("/app/payments/new", {"type": "invoice", "amount": amount, "currency": coin,
                                                          "order_id": "order-1"})
    track_id = response.headers["Location"].split("/")[-1].split("?")[0]
    page = await visitor.get(f"/app/payments/{track_id}")
    assert 'id="status" data-events="/app/payments/' in page  # the script follows the payment's stream
    payment = await Devnet(client).gateway.db.fetch_one("SELECT address, pay_amount FROM payments"
                                                        " WHERE track_id = :t", {"t": track_id})
    devnet = Devnet(client)
    await devnet.pay(coin, payment["address"], amount)
    await devnet.mine(6)
    page = await visitor.get(f"/app/payments/{track_id}")
    assert 'id="status">Paid' in page and 'id="receipt"' in page
    return track_id
