"""The brands' dashboard page: list, create (name, look, webhook), edit with a preview, archive.

``?edit=<id>`` opens a brand's edit form in place of the new-brand form;
its Preview button checks what was typed exactly as saving would (the WCAG
AA check included) and draws the page it would give, storing nothing.
"""

from __future__ import annotations

from typing import Any, Mapping

from ...api import (
    BrandChoice, DashboardRedirect, DashboardView, NotFound, ValidationError, accent_problem, readable_accent,
)
from . import store
from .branding import choice
from .routes import archive_brand, brand_changes, brand_view, create_brand, update_brand

FIELDS = ("name", "slug", "logo_url", "theme_mode", "brand_color", "webhook_url", "webhook_secret")
EDITED = ("name", "slug", "logo_url", "theme_mode", "brand_color", "webhook_url")  # "" clears all but name, slug
SAVED = "brand-saved"


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str], *,
               typed: Mapping[str, str] | None = None, preview: BrandChoice | None = None) -> DashboardView:
    """The brands; with ``edit`` in ``query`` that brand's form (``typed`` refills it, ``preview`` is drawn)."""
    await store.ensure_default(gateway, merchant_id)
    rows = await store.list_for(gateway, merchant_id, archived=False)
    context: dict[str, Any] = {"brands": [_with_contrast(brand_view(row)) for row in rows]}
    edit_id = query.get("edit")
    if edit_id:
        editing = next((row for row in rows if row["id"] == edit_id), None)
        if editing is None:
            return DashboardView("brands/dashboard.html", {**context, "error": "No such brand in this account."},
                                 status=404)
        default = next((row for row in rows if row["slug"] == store.DEFAULT_SLUG), None)
        context.update(editing=brand_view(editing), typed=typed or {},
                       preview=preview or _look(editing, {}, default))
    return DashboardView("brands/dashboard.html", context)


def _with_contrast(view: dict[str, Any]) -> dict[str, Any]:
    """A brand as listed, with ``accent_note`` when its colour (stored before the AA check) is drawn adjusted.

    Payer pages draw such a colour as ``readable_accent`` of it (never a
    broken or unreadable page); the merchant is told which and why here.
    """
    color = view.get("brand_color")
    problem = accent_problem(color) if color else None
    note = f"{problem}. Pages draw it as {readable_accent(color)}." if problem and color else None
    return {**view, "accent_note": note}


def _look(brand: Mapping[str, Any], changes: Mapping[str, Any], default: Mapping[str, Any] | None) -> BrandChoice:
    """The brand as its pages would draw it with ``changes``: a cleared look inherits the default brand's."""
    return choice({**brand, **changes}, default)


def _edit_body(form: Mapping[str, Any]) -> dict[str, Any]:
    """The update body of the edit form: every shown field as typed ("" clears it), the webhook secret only
    when one is typed (blank keeps the stored one) or its removal ticked."""
    body: dict[str, Any] = {name: str(form.get(name) or "").strip() for name in EDITED if name in form}
    secret = form.get("webhook_secret")
    if form.get("clear_webhook_secret"):
        body["webhook_secret"] = None
    elif isinstance(secret, str) and secret:
        body["webhook_secret"] = secret
    return body


async def _own(gateway: Any, merchant_id: str, brand_id: Any) -> Any:
    try:
        return await store.get(gateway, merchant_id, str(brand_id or ""))
    except NotFound:
        raise NotFound("no such brand in this account") from None


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any]) -> DashboardView | DashboardRedirect | None:
    action = form.get("action")
    if action == "create":
        await store.ensure_default(gateway, merchant_id)
        await create_brand(gateway, merchant_id, {name: form[name].strip() for name in FIELDS
                                                  if isinstance(form.get(name), str) and form[name].strip()})
    elif action in ("save", "preview"):
        current = await _own(gateway, merchant_id, form.get("brand_id"))
        body = _edit_body(form)
        if action == "save":
            await update_brand(gateway, merchant_id, current, body)
            return DashboardRedirect(f"/app/brands?notice={SAVED}")
        changes = await brand_changes(gateway, current, body)  # refused exactly as saving would be
        _, default = await store.brand_and_default(gateway, merchant_id, None)
        if default is not None and default["id"] == current["id"]:  # the default brand inherits nothing
            default = None
        typed = {name: value for name, value in form.items() if isinstance(value, str) and name != "csrf_token"}
        return await page(gateway, merchant_id, {"edit": current["id"]}, typed=typed,
                          preview=_look(current, changes, default))
    elif action == "archive":
        await archive_brand(gateway, merchant_id, str(form.get("brand_id")))
    else:
        raise ValidationError({"action": "must be create, save, preview or archive"})
    return None
