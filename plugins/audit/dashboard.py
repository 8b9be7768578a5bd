"""A key's audit log as a dashboard page (slot ``key-actions``: linked from each key with ``?key_id=``)."""

from __future__ import annotations

from typing import Any, Mapping

from ...api import DashboardView, int_from_text
from .store import key_log, require_own_key

PAGE_SIZE = 50
MAX_OFFSET = 10**12  # as web.validation.pagination


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str]) -> DashboardView:
    key_id = query.get("key_id", "")
    await require_own_key(gateway, merchant_id, key_id)
    asked = int_from_text(query.get("offset", ""))  # bounded: "²" and 5,000 digits used to be a 500
    offset = asked if asked is not None and 0 <= asked <= MAX_OFFSET else 0
    entries, total = await key_log(gateway, key_id, limit=PAGE_SIZE, offset=offset)
    return DashboardView("audit/dashboard.html", {
        "key_id": key_id, "entries": entries, "total": total, "offset": offset,
        "next_offset": offset + PAGE_SIZE if offset + PAGE_SIZE < total else None})
