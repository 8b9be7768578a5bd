"""The payout schedules' dashboard page: list, create, pause or resume, delete."""

from __future__ import annotations

from typing import Any, Mapping

from ...api import DashboardView, ValidationError, form_integer
from ...api.merchant import payable_coins, require_merchant
from . import store
from .routes import MAX_INTERVAL, MIN_INTERVAL, create_schedule, schedule_view


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str]) -> DashboardView:
    rows = await store.list_for(gateway, merchant_id)
    return DashboardView("schedules/dashboard.html", {
        "schedules": [schedule_view(gateway, row) for row in rows],
        "coins": payable_coins(gateway, await require_merchant(gateway.db, merchant_id)), "min_interval": MIN_INTERVAL,
        "max_interval": MAX_INTERVAL})


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any]) -> None:
    action = form.get("action")
    if action == "create":
        hours = form_integer(form.get("interval_hours"), "interval_hours", minimum=1, maximum=MAX_INTERVAL // 3600)
        await create_schedule(gateway, merchant_id, {
            "coin": form.get("coin"), "destination": str(form.get("destination", "")).strip(),
            "min_amount": str(form.get("min_amount", "")).strip(), "interval_sec": hours * 3600})
        return
    schedule = await store.get(gateway, merchant_id, str(form.get("schedule_id")))  # 404 when not this merchant's
    if action in ("pause", "resume"):
        await store.update(gateway, merchant_id, schedule["id"], {"enabled": action == "resume"})
    elif action == "delete":
        await store.delete(gateway, merchant_id, schedule["id"])
    else:
        raise ValidationError({"action": "must be create, pause, resume or delete"})
