"""The auto-withdraw rules as a settings page: add a rule for a coin, remove one (the API's PUT underneath)."""

from __future__ import annotations

from typing import Any, Mapping

from ...api import DashboardView, ValidationError
from ...api.merchant import payable_coins, require_merchant
from . import store
from .routes import MAX_RULES, replace_rules, rule_view


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str]) -> DashboardView:
    rows = await store.rules_of(gateway, merchant_id)
    return DashboardView("autowithdraw/dashboard.html", {
        "rules": [rule_view(gateway, row) for row in rows], "max_rules": MAX_RULES,
        "coins": payable_coins(gateway, await require_merchant(gateway.db, merchant_id))})


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any]) -> None:
    current = [{k: r[k] for k in ("coin", "threshold_native", "destination")}
               for r in (rule_view(gateway, row) for row in await store.rules_of(gateway, merchant_id))]
    action = form.get("action")
    if action == "add":
        coin = str(form.get("coin", "")).upper()
        rules = [r for r in current if r["coin"] != coin] + [{
            "coin": coin, "threshold_native": str(form.get("threshold_native", "")).strip(),
            "destination": str(form.get("destination", "")).strip()}]
    elif action == "remove":
        rules = [r for r in current if r["coin"] != form.get("coin")]
    else:
        raise ValidationError({"action": "must be add or remove"})
    await replace_rules(gateway, merchant_id, rules)
