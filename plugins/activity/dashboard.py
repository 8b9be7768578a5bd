"""The account activity page (``/app/activity``, main navigation) and the home page's alerts.

The page lists the security log newest first, 50 a page (a member without
``activity:read`` sees only their own entries: ``visibility.py``); an alert not
dismissed yet carries a Dismiss button, and the same alerts show on the
dashboard's home page (``extra_dashboard_notices``) until dismissed. Dismissing
posts here (CSRF checked by the dashboard) and records a dismissal; the log
itself never changes.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Mapping

from ...api import DashboardNotice, DashboardView, NotFound, Principal, ValidationError
from . import store
from .visibility import own_entries_of

PAGE_PATH = "/app/activity"
PAGE_SIZE = 50
# ASCII digits only: ``str.isdigit`` passes "²" and Arabic-Indic digits, which ``int`` then refuses (a 500).
_OFFSET = re.compile(r"[0-9]{1,9}")
_EVENT_ID = re.compile(r"[0-9]{1,18}")
HOME_ALERTS = 5


def _offset(query: Mapping[str, str]) -> int:
    value = query.get("offset", "")
    return int(value) if _OFFSET.fullmatch(value) else 0


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str],
               principal: Principal | None = None) -> DashboardView:
    offset = _offset(query)
    own = own_entries_of(principal)
    entries, total = await store.events(gateway, merchant_id, limit=PAGE_SIZE, offset=offset, actor=own)
    return DashboardView("activity/dashboard.html", {
        "entries": entries, "total": total, "offset": offset, "own_only": own is not None,
        "newer_offset": max(offset - PAGE_SIZE, 0) if offset else None,
        "older_offset": offset + PAGE_SIZE if offset + PAGE_SIZE < total else None})


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any], principal: Principal | None = None) -> None:
    """``action=dismiss`` with ``event_id``: one of the alerts this person may read stops showing on the home page."""
    event_id = form.get("event_id", "")
    if form.get("action") != "dismiss" or not isinstance(event_id, str) or not _EVENT_ID.fullmatch(event_id):
        raise ValidationError({"event_id": "must name an alert of this account"})
    if not await store.dismiss(gateway, merchant_id, int(event_id), own_entries_of(principal)):
        raise NotFound("no such alert")


def _when(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


async def notices(gateway: Any, merchant_id: str, principal: Principal | None = None) -> list[DashboardNotice]:
    return [DashboardNotice(
        f"{alert['description']} ({_when(alert['created_at'])}, from {alert['client_ip'] or 'unknown'}). "
        "If this was not you, unlink any Telegram chat you do not know and change your password.",
        PAGE_PATH, {"action": "dismiss", "event_id": str(alert["id"])}, "Review account activity", PAGE_PATH)
        for alert in await store.open_alerts(gateway, merchant_id, HOME_ALERTS, own_entries_of(principal))]
