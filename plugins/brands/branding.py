"""What a brand changes outside its own routes: hosted pages, webhooks, API keys.

A payment's brand is the one its creating key carried (the core stores it
as ``brand_id``); an untagged payment belongs to the account's default
brand. Each setting is the brand's own, else the default brand's, else the
account's (docs/decisions.md, "Brands"). Archived brands still apply to
payments already tagged with them: archiving hides a brand from listings
and from new keys, it does not re-route the webhooks of payments in flight.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Mapping

from ...api import BrandChoice, PageBranding, WebhookDestination, cached
from . import store

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger(__name__)
LOOKS = ("logo_url", "theme_mode", "brand_color")


async def page_branding(gateway: "Gateway", merchant_id: str, brand_id: str | None) -> PageBranding | None:
    """The branding of a page of this brand (or of the default brand), None when nothing is set.

    Asked on every hosted page view (an open page refreshes every 15 s), so
    the answer is cached per (merchant, brand) in each process: store.py
    empties the cache after each change it commits, and the brands table's
    trigger (migration m0002) makes every other process empty theirs.
    """
    return await cached(gateway, "brands:page", (merchant_id, brand_id),
                                  lambda: _page_branding(gateway, merchant_id, brand_id))


async def _page_branding(gateway: "Gateway", merchant_id: str, brand_id: str | None) -> PageBranding | None:
    brand, default = await store.brand_and_default(gateway, merchant_id, brand_id)
    looks = {field: store.effective(brand, default, field) for field in LOOKS}
    name = (brand or default or {}).get("name")
    if name == store.DEFAULT_NAME:  # the placeholder every account starts with names nobody
        name = None
    if not any(looks.values()) and not name:  # a name alone is shown too: the payer sees whom they pay
        return None
    try:
        return PageBranding(name=name, **looks)
    except ValueError:
        # Stored values passed the same checks when saved; if the rules have
        # since tightened, show the page plain rather than anything unchecked.
        log.warning("brand %s of merchant %s no longer passes the page checks", brand_id, merchant_id)
        return None


async def webhook_destination(gateway: "Gateway", merchant_id: str,
                              brand_id: str | None) -> WebhookDestination | None:
    """The brand's webhook URL and signing secret (each else the default brand's), None for neither."""
    brand, default = await store.brand_and_default(gateway, merchant_id, brand_id)
    url = store.effective(brand, default, "webhook_url")
    secret = store.effective(brand, default, "webhook_secret")
    if not (url or secret):
        return None
    return WebhookDestination(url=url, secret=secret)


async def key_brand_allowed(gateway: "Gateway", merchant_id: str, brand_id: str) -> bool:
    """A key may name only a live brand of its own account."""
    return await store.live_brand_exists(gateway, merchant_id, brand_id)


async def brand_choices(gateway: "Gateway", merchant_id: str) -> list[BrandChoice]:
    """The live brands a form may tag with, oldest first, each with its look as its pages inherit it (for the
    form's preview); not the default brand, which an untagged one wears."""
    rows = await store.list_for(gateway, merchant_id, archived=False)
    default = next((row for row in rows if row["slug"] == store.DEFAULT_SLUG), None)
    return [choice(row, default) for row in rows if row["slug"] != store.DEFAULT_SLUG]


def choice(row: Mapping[str, Any], default: Mapping[str, Any] | None) -> BrandChoice:
    """``row`` as a form previews it, each look its own else ``default``'s; a stored logo URL that no longer
    passes the page checks is left out of the preview, as its pages leave it out (``_page_branding``)."""
    looks = {field: store.effective(row, default, field) for field in LOOKS}
    try:
        return BrandChoice(row["id"], row["name"], **looks)
    except ValueError:
        return BrandChoice(row["id"], row["name"], **{**looks, "logo_url": None})
