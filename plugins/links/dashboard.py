"""The payment links' dashboard page: create a link, turn it on or off, copy its URL and embed snippet."""

from __future__ import annotations

from typing import Any, Mapping

from ...api import FIAT_CURRENCIES, DashboardView, ValidationError
from ...api.merchant import require_merchant, servable_coins
from . import store
from .routes_dashboard import create_link
from .views import DEFAULT_LABEL, embed_snippet, link_view

FIELDS = ("coin", "amount", "amount_fiat", "fiat_currency", "lifetime", "description")


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str]) -> DashboardView:
    rows = await store.list_for(gateway, merchant_id)
    links = [{**link_view(gateway, row), "snippet": embed_snippet(gateway, row["slug"], DEFAULT_LABEL)}
             for row in rows]
    merchant = await require_merchant(gateway.db, merchant_id)
    # The coins a link can mint invoices in (the API refuses any other): the merchant's, the first chosen.
    return DashboardView("links/dashboard.html", {"links": links, "coins": servable_coins(gateway, merchant),
                                                  "fiats": FIAT_CURRENCIES})


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any]) -> None:
    """``action=create`` (the API's create body as form fields) or ``action=enable|disable`` with ``link_id``."""
    action = form.get("action")
    if action == "create":
        body: dict[str, Any] = {name: form[name].strip() for name in FIELDS
                                if isinstance(form.get(name), str) and form[name].strip()}
        await create_link(gateway, merchant_id, body, text=True)
    elif action in ("enable", "disable"):
        link_id = form.get("link_id")
        await store.get(gateway, merchant_id, str(link_id))  # 404 for another merchant's link
        await store.set_enabled(gateway, merchant_id, str(link_id), action == "enable")
    else:
        raise ValidationError({"action": "must be create, enable or disable"})
