"""Plans and subscriptions as a dashboard page: the plans (create, turn on or off), the subscriptions, the MRR.

Sign-ups from the customer page still waiting for their first payment are
listed apart, as enrolments, with their invoice: they are not subscriptions
(the API does not list them) until that invoice is paid.
"""

from __future__ import annotations

from typing import Any, Mapping

from ...api import DashboardRedirect, DashboardView, NotFound, ValidationError, brand_choices, form_integer
from . import enrolment, plans, store
from .routes_api import new_plan, plan_brand

DAY = 86400
BRAND_SAVED = "brand-saved"
LISTED = 50  # rows of each table on the page


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str]) -> DashboardView:
    plan_rows = await store.plans_of(gateway, merchant_id)
    rows, total = await store.list_subscriptions(gateway, merchant_id, status=None, customer_ref=None,
                                                 limit=LISTED, offset=0)
    pending = await store.pending_enrolments(gateway, merchant_id, LISTED)
    brands = await brand_choices(gateway, merchant_id)  # the picker (decide_brand_choices) and each plan's brand
    view = DashboardView("subscriptions/dashboard.html", {
        "plans": [plans.plan_view(gateway, r) for r in plan_rows],
        "subscriptions": [enrolment.subscription_view(gateway, r) for r in rows], "total": total,
        "pending": [enrolment.subscription_view(gateway, r) for r in pending],
        "summary": await enrolment.summary(gateway, merchant_id),
        "min_days": plans.MIN_INTERVAL // DAY or 1, "max_days": plans.MAX_INTERVAL // DAY,
        "brands": brands, "brand_names": {b.brand_id: b.name for b in brands}})
    if query.get("brand"):  # ?brand=<plan id>: that plan's brand form in place of the new-plan form
        branding = next((plan for plan in view.context["plans"] if plan["id"] == query["brand"]), None)
        if branding is None:
            return DashboardView(view.template, {**view.context, "error": "No such plan in this account."},
                                 status=404)
        return DashboardView(view.template, {**view.context, "branding": branding})
    return view


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any]) -> DashboardRedirect | None:
    action = form.get("action")
    if action == "create":
        days = form_integer(form.get("interval_days"), "interval_days", minimum=1, maximum=plans.MAX_INTERVAL // DAY)
        coins = [c.strip().upper() for c in str(form.get("accepted_coins", "")).split(",") if c.strip()]
        await new_plan(gateway, merchant_id, {"label": str(form.get("label", "")).strip(),
                                              "amount_usd": str(form.get("amount_usd", "")).strip(),
                                              "interval_sec": days * DAY, "accepted_coins": coins,
                                              "brand_id": str(form.get("brand_id") or "").strip() or None})
    elif action == "brand":
        try:
            plan = await store.plan_of(gateway, merchant_id, str(form.get("plan_id") or ""))
        except NotFound:  # another merchant's plan reads as none at all
            raise NotFound("no such plan in this account") from None
        brand_id = await plan_brand(gateway, merchant_id, str(form.get("brand_id") or "").strip() or None)
        await store.update_plan(gateway, merchant_id, plan["id"], {"brand_id": brand_id})
        return DashboardRedirect(f"/app/subscriptions?notice={BRAND_SAVED}")
    elif action in ("enable", "disable"):
        plan = await store.plan_of(gateway, merchant_id, str(form.get("plan_id")))  # 404 when not this merchant's
        await store.update_plan(gateway, merchant_id, plan["id"], {"enabled": action == "enable"})
    else:
        raise ValidationError({"action": "must be create, brand, enable or disable"})
    return None
