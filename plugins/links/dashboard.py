"""The payment links' dashboard page: create a link, turn it on or off, copy its URL and embed snippet."""

from __future__ import annotations

from typing import Any, Mapping

from ...api import FIAT_CURRENCIES, DashboardView, Field, ValidationError, brand_choices, validate
from ...api.merchant import require_merchant, servable_coins
from . import store
from .routes_dashboard import LABEL, create_link
from .views import button_text, embed_snippet, link_view

FIELDS = ("coin", "amount", "amount_fiat", "fiat_currency", "lifetime", "description", "brand_id")


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str],
               labels: Mapping[str, str] | None = None) -> DashboardView:
    """The links; ``labels`` holds the button text the merchant typed for a link's snippet (link id -> text)."""
    links = []
    for row in await store.list_for(gateway, merchant_id):
        view = link_view(gateway, row)
        label = (labels or {}).get(view["id"]) or button_text(view)
        links.append({**view, "label": label, "snippet": embed_snippet(gateway, row["slug"], label)})
    merchant = await require_merchant(gateway.db, merchant_id)
    # The coins a link can mint invoices in (the API refuses any other): the merchant's, the first chosen.
    brands = await brand_choices(gateway, merchant_id)  # the picker (decide_brand_choices) and each link's brand
    return DashboardView("links/dashboard.html", {"links": links, "coins": servable_coins(gateway, merchant),
                                                  "fiats": FIAT_CURRENCIES, "brands": brands,
                                                  "brand_names": {b.brand_id: b.name for b in brands}})


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any]) -> DashboardView | None:
    """``action=create`` (the API's create body as form fields), ``action=enable|disable`` with ``link_id``,
    or ``action=button`` with ``link_id`` and ``label``: the page again, that link's snippet with that text."""
    action = form.get("action")
    if action == "button":
        clean = validate(form, [Field("link_id", required=True, max_len=64), LABEL], text=True)
        await store.get(gateway, merchant_id, clean["link_id"])  # 404 for another merchant's link
        return await page(gateway, merchant_id, {}, {clean["link_id"]: clean["label"] or ""})
    if action == "create":
        body: dict[str, Any] = {name: form[name].strip() for name in FIELDS
                                if isinstance(form.get(name), str) and form[name].strip()}
        await create_link(gateway, merchant_id, body, text=True)
    elif action in ("enable", "disable"):
        link_id = form.get("link_id")
        await store.get(gateway, merchant_id, str(link_id))  # 404 for another merchant's link
        await store.set_enabled(gateway, merchant_id, str(link_id), action == "enable")
    else:
        raise ValidationError({"action": "must be create, enable, disable or button"})
    return None
