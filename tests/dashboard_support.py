"""A browser without JavaScript, at the HTTP level: the dashboard's cookie jar, its forms and their CSRF tokens."""

from __future__ import annotations

import html
import re
from typing import Any

CSRF = re.compile(r'name="csrf_token" value="([^"]*)"')
PASSWORD = "correct horse battery"


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

    async def sign_in(self, email: str, password: str = PASSWORD) -> None:
        await self.get("/app/login")
        response = await self.submit("/app/login", {"email": email, "password": password})
        assert response.headers["Location"] == "/app"
