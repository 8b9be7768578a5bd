"""The brands' dashboard page: list, create (name, look, webhook), archive."""

from __future__ import annotations

from typing import Any, Mapping

from ...api import DashboardView, ValidationError, accent_problem, readable_accent
from . import store
from .routes import archive_brand, brand_view, create_brand

FIELDS = ("name", "slug", "logo_url", "theme_mode", "brand_color", "webhook_url", "webhook_secret")


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str]) -> DashboardView:
    await store.ensure_default(gateway, merchant_id)
    rows = await store.list_for(gateway, merchant_id, archived=False)
    return DashboardView("brands/dashboard.html", {"brands": [_with_contrast(brand_view(row)) for row in rows]})


def _with_contrast(view: dict[str, Any]) -> dict[str, Any]:
    """A brand as listed, with ``accent_note`` when its colour (stored before the AA check) is drawn adjusted.

    Payer pages draw such a colour as ``readable_accent`` of it (never a
    broken or unreadable page); the merchant is told which and why here.
    """
    color = view.get("brand_color")
    problem = accent_problem(color) if color else None
    note = f"{problem}. Pages draw it as {readable_accent(color)}." if problem and color else None
    return {**view, "accent_note": note}


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any]) -> None:
    action = form.get("action")
    if action == "create":
        await store.ensure_default(gateway, merchant_id)
        await create_brand(gateway, merchant_id, {name: form[name].strip() for name in FIELDS
                                                  if isinstance(form.get(name), str) and form[name].strip()})
    elif action == "archive":
        await archive_brand(gateway, merchant_id, str(form.get("brand_id")))
    else:
        raise ValidationError({"action": "must be create or archive"})
