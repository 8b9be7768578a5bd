"""How a link is shown: the dashboard record (SPEC 2.16) and the embed snippet (SPEC 4.11)."""

from __future__ import annotations

from typing import Any, Mapping

from markupsafe import escape

from ...api import Gateway

DEFAULT_LABEL = "Donate crypto"  # SPEC 4.14, donate.js's own default
PRICED_LABEL = "Pay with crypto"  # a link with a price sells something: "donate" would mislabel it
MAX_LABEL = 80  # SPEC 8: label 1-80


def link_url(gateway: Gateway, slug: str) -> str:
    return f"{gateway.config.base_url}/l/{slug}"


def link_view(gateway: Gateway, row: Mapping[str, Any]) -> dict[str, Any]:
    """SPEC 2.16 (id, slug, url, coin, amount_fiat, fiat_currency, enabled, uses) plus what was set at creation."""
    coin = gateway.coins.get(row["coin"])
    amount = row["amount"]
    if amount is not None:
        units = gateway.db.to_int(amount)
        amount = coin.format(units) if coin is not None else str(units)
    return {
        "id": row["id"], "slug": row["slug"], "url": link_url(gateway, row["slug"]), "coin": row["coin"],
        "amount": amount, "amount_fiat": row["amount_fiat"], "fiat_currency": row["fiat_currency"],
        "enabled": bool(row["enabled"]), "uses": int(row["uses"]),
        "lifetime": None if row["lifetime_minutes"] is None else int(row["lifetime_minutes"]),
        "description": row["description"], "brand_id": row["brand_id"], "created_at": int(row["created_at"]),
    }


def button_text(view: Mapping[str, Any]) -> str:
    """The embed button's text unless the merchant typed one: the link's purpose (its description, when it
    fits a button), else what a priced or pay-what-you-want link asks for."""
    description = " ".join((view.get("description") or "").split())
    if 0 < len(description) <= MAX_LABEL:
        return description
    return PRICED_LABEL if view.get("amount") or view.get("amount_fiat") else DEFAULT_LABEL


def embed_snippet(gateway: Gateway, slug: str, label: str) -> str:
    """Paste-ready markup: the button's element, the script, and a plain link when scripts are off."""
    base = gateway.config.base_url
    url = link_url(gateway, slug)
    return (
        f'<div class="orbchain-donate" data-slug="{escape(slug)}" data-label="{escape(label)}"></div>\n'
        f'<noscript><a href="{escape(url)}" target="_blank" rel="noopener">{escape(label)}</a></noscript>\n'
        f'<script src="{escape(base)}/assets/donate.js" async></script>'
    )
