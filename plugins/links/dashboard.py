"""The payment links' dashboard page: create a link, turn it on or off, copy its URL and embed snippet."""

from __future__ import annotations

from typing import Any, Mapping

from ...api import (
    FIAT_CURRENCIES, DashboardRedirect, DashboardView, Field, NotFound, ValidationError, brand_choices, validate,
)
from ...api.merchant import require_merchant, servable_coins
from . import store
from .routes_dashboard import LABEL, change_brand, create_link
from .views import button_text, embed_snippet, link_view

BRAND_SAVED = "brand-saved"
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
    context = {"links": links, "coins": servable_coins(gateway, merchant), "fiats": FIAT_CURRENCIES,
               "brands": brands, "brand_names": {b.brand_id: b.name for b in brands}}
    if query.get("brand"):  # ?brand=<link id>: that link's brand form in place of the new-link form
        branding = next((link for link in links if link["id"] == query["brand"]), None)
        if branding is None:
            return DashboardView("links/dashboard.html", {**context, "error": "No such link in this account."},
                                 status=404)
        context["branding"] = branding
    return DashboardView("links/dashboard.html", context)


async def _own_link(gateway: Any, merchant_id: str, link_id: Any) -> Any:
    try:
        return await store.get(gateway, merchant_id, str(link_id or ""))
    except NotFound:  # another merchant's link reads as none at all
        raise NotFound("no such link in this account") from None


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any]) -> DashboardView | DashboardRedirect | None:
    """``action=create`` (the API's create body as form fields), ``action=enable|disable`` with ``link_id``,
    ``action=brand`` with ``link_id`` and ``brand_id`` ("" clears it),
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
    elif action == "brand":
        link = await _own_link(gateway, merchant_id, form.get("link_id"))
        await change_brand(gateway, merchant_id, link["id"], str(form.get("brand_id") or "").strip() or None)
        return DashboardRedirect(f"/app/links?notice={BRAND_SAVED}")
    elif action in ("enable", "disable"):
        link_id = form.get("link_id")
        await store.get(gateway, merchant_id, str(link_id))  # 404 for another merchant's link
        await store.set_enabled(gateway, merchant_id, str(link_id), action == "enable")
    else:
        raise ValidationError({"action": "must be create, brand, enable, disable or button"})
    return None
