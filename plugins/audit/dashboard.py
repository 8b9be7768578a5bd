"""A key's audit log as a dashboard page (slot ``key-actions``: linked from each key with ``?key_id=``)."""

from __future__ import annotations

from typing import Any, Mapping

from ...core.pages import DashboardView
from .store import key_log, require_own_key

PAGE_SIZE = 50


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str]) -> DashboardView:
    key_id = query.get("key_id", "")
    await require_own_key(gateway, merchant_id, key_id)
    offset = int(query["offset"]) if query.get("offset", "").isdigit() else 0
    entries, total = await key_log(gateway, key_id, limit=PAGE_SIZE, offset=offset)
    return DashboardView("audit/dashboard.html", {
        "key_id": key_id, "entries": entries, "total": total, "offset": offset,
        "next_offset": offset + PAGE_SIZE if offset + PAGE_SIZE < total else None})
