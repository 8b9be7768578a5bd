"""The dashboard's Telegram page (``/app/telegram``, a settings tab): the linked chat, unlinking, and the
confirmation a link token must pass before anything is linked.

A browser reaches the confirmation with the token in the query
(``/app/telegram?t=<token>``): from the dashboard's ``#tg-link=`` landing
(its script posts the fragment, the dashboard forwards here through the
``tg_link`` service), from the paste form on the dashboard's landing page
when scripts are off, or from this page's own paste form. A GET shows
whose chat it is (name and @username recorded at ``/start``) and a form
asking for the password, or a TOTP code with 2FA on; only that POST, with
the dashboard's CSRF token, links (``linking.complete_link``).
"""

from __future__ import annotations

from typing import Any, Mapping

from ...api import ApiError, DashboardView, ValidationError
from . import linking, store
from .settings import settings_of

TEMPLATE = "telegram/dashboard.html"


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str]) -> DashboardView:
    settings = settings_of(gateway)
    context: dict[str, Any] = {"enabled": settings.enabled, "bot_username": settings.bot_username,
                               "link": linking.link_view(await store.link_of(gateway, merchant_id)),
                               "pasted": query.get("t", "")}
    if not settings.enabled or "t" not in query:
        return DashboardView(TEMPLATE, context)
    token = linking.token_in(query.get("t"))
    try:
        pending = await linking.pending_link(gateway, token)
    except ApiError as exc:
        detail = "this is not a Telegram link from our bot" if token is None else exc.message
        return DashboardView(TEMPLATE, {**context, "link_error": detail[:1].upper() + detail[1:] + "."},
                             status=exc.status)
    return DashboardView(TEMPLATE, {**context, "confirm": {"token": pending.text, "chat": pending.chat}})


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any]) -> DashboardView | None:
    """``action=link`` (t, password or totp_code) or ``action=unlink``; errors show on the page."""
    action = form.get("action")
    if action == "link":
        await linking.complete_link(gateway, merchant_id, linking.token_in(form.get("t")),
                                    password=form.get("password") or None, totp_code=form.get("totp_code") or None)
        linked = linking.link_view(await store.link_of(gateway, merchant_id))
        return DashboardView(TEMPLATE, {"enabled": True, "bot_username": settings_of(gateway).bot_username,
                                        "link": linked, "linked_now": True})
    if action == "unlink":
        await linking.unlink(gateway, merchant_id, via=linking.DASHBOARD)
        return None
    raise ValidationError({"action": "must be link or unlink"})
