"""Shops, brands and the brand picker as the dashboard's brand tests read them (tests/test_brand_*.py)."""

from __future__ import annotations

import re

from .dashboard_support import Visitor
from .support import api

DARK_BLUE, OLD_RED = "#0060df", "#ff0000"


async def shop(client, email: str) -> tuple[Visitor, dict[str, str]]:
    """A signed-in visitor accepting BTC and LTC, and its account's JWT header for the JSON API."""
    visitor = Visitor(client)
    await visitor.sign_up(email)
    await visitor.get("/app/settings")
    await visitor.submit("/app/settings/coins", {"accepted_coins": ["BTC", "LTC"]})
    status, body = await api(client, "POST", "/dashboard/auth/login", {},
                             json={"email": email, "password": "correct horse battery"})
    assert status == 200, body
    return visitor, {"Authorization": f"Bearer {body['data']['token']}"}


async def brand(client, jwt, name: str, **looks) -> str:
    status, body = await api(client, "POST", "/dashboard/brands", jwt, json={"name": name, **looks})
    assert status == 200, body
    return body["data"]["id"]


def picker(page: str, select_id: str) -> list[str]:
    select = re.search(rf'<select id="{select_id}" name="brand_id".*?</select>', page, re.S)
    assert select, f"no brand picker {select_id}"
    return re.findall(r'<option value="([^"]*)"', select.group(0))


def preview(page: str, brand_id: str) -> dict[str, str]:
    """The colours the preview of ``brand_id`` is drawn in: card, button, button text."""
    svg = re.search(rf'<svg class="brand-preview" id="brand-preview-{brand_id}".*?</svg>', page, re.S)
    assert svg, f"no preview of {brand_id}"
    fills = re.findall(r'fill="(#[0-9a-f]{6})"', svg.group(0))
    title = re.search(r"<title[^>]*>([^<]*)</title>", svg.group(0)).group(1)
    return {"card": fills[0], "button": fills[3], "label": fills[4], "title": title}


def field_error(page: str, name: str) -> str:
    assert re.search(rf'name="{name}"[^>]*aria-invalid="true" aria-describedby="error-{name}"', page), name
    return re.search(rf'<p class="field-error" id="error-{name}">([^<]*)</p>', page).group(1)
