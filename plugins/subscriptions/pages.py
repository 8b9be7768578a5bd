"""The customer's pages (SPEC 4.14): enrol at ``/subscribe/{plan_id}``, manage at ``/subscribe/manage/{token}``.

Plain HTML forms, no JavaScript: every button is a POST form answered with
a 303 to the page to show next (post/redirect/get, so a reload never
repeats an action). Limited to 60 requests per minute per IP (the
``public_page`` class, SPEC 8). The manage page is reached only through
its magic token; after a cancel the customer is sent to the new token's
page, and the old link answers 404.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Mapping

import aiohttp_jinja2
from aiohttp import web

from ...core import services
from ...core.errors import ApiError, ValidationError
from ...web.form_body import read_form
from ...web.keys import gateway_of
from ...web.middlewares import rate_class
from ...web.pages import html_page, page_security_headers
from ...web.validation import Field, validate
from . import enrolment, store
from .store import ACTIVE, PAUSED

routes = web.RouteTableDef()

FORM_FIELDS = [Field("email", "email", max_len=254), Field("customer_ref", max_len=128)]


def when(timestamp: Any) -> str | None:
    return None if timestamp is None else datetime.fromtimestamp(int(timestamp), UTC).strftime("%Y-%m-%d %H:%M UTC")


def every(seconds: int) -> str:
    """The interval in words a customer reads ("30 days", "1 hour", "90 minutes" stays in seconds)."""
    for unit, size in (("day", 86400), ("hour", 3600)):
        if seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}" + ("s" if count != 1 else "")
    return f"{seconds} seconds"


async def _render(request: web.Request, template: str, context: Mapping[str, Any], merchant_id: str,
                  status: int = 200) -> web.Response:
    branding = await services.page_branding_for(gateway_of(request), merchant_id)
    response = aiohttp_jinja2.render_template(f"subscriptions/{template}", request,
                                              {**context, "branding": branding}, status=status)
    return page_security_headers(response, branding=branding)


def _not_found(request: web.Request, title: str, message: str) -> web.Response:
    response = aiohttp_jinja2.render_template("error.html", request, {"title": title, "message": message}, status=404)
    return page_security_headers(response)


def _plan_context(plan: Mapping[str, Any]) -> dict[str, Any]:
    return {"plan_id": plan["id"], "label": plan["label"], "amount_usd": plan["amount_usd"],
            "every": every(int(plan["interval_sec"])), "coins": store.coins_of(plan)}


async def _enabled_plan(request: web.Request) -> Mapping[str, Any] | None:
    plan = await store.public_plan(gateway_of(request), request.match_info["plan_id"][:64])
    return plan if plan is not None and plan["enabled"] else None


def _plan_gone(request: web.Request) -> web.Response:
    return _not_found(request, "Plan not available",
                      "This subscription plan does not exist or is no longer offered. Ask the merchant for a new link.")


async def _form(request: web.Request) -> Mapping[str, Any]:
    return {k: v for k, v in (await read_form(request)).items() if isinstance(v, str)}


@routes.get("/subscribe/{plan_id}")
@rate_class("public_page")
@html_page
async def subscribe_page(request: web.Request) -> web.StreamResponse:
    plan = await _enabled_plan(request)
    if plan is None:
        return _plan_gone(request)
    return await _render(request, "subscribe.html", {**_plan_context(plan), "values": {}, "errors": {}},
                         plan["merchant_id"])


@routes.post("/subscribe/{plan_id}")
@rate_class("public_page")
@html_page
async def subscribe(request: web.Request) -> web.StreamResponse:
    plan = await _enabled_plan(request)
    if plan is None:
        return _plan_gone(request)
    form = await _form(request)
    try:
        clean = validate(form, FORM_FIELDS)
    except ValidationError as exc:
        values = {k: form.get(k, "")[:256] for k in ("email", "customer_ref")}
        return await _render(request, "subscribe.html", {**_plan_context(plan), "values": values,
                                                         "errors": exc.detail or {}}, plan["merchant_id"], status=400)
    _, token = await enrolment.enrol_customer(gateway_of(request), plan, customer_ref=clean["customer_ref"],
                                              customer_email=clean["email"])
    raise web.HTTPSeeOther(enrolment.manage_path(token))


async def _by_token(request: web.Request) -> Mapping[str, Any] | None:
    try:
        return await enrolment.by_token(gateway_of(request), request.match_info["token"])
    except ApiError:
        return None


def _link_gone(request: web.Request) -> web.Response:
    return _not_found(request, "Link not valid",
                      "This subscription link is not valid: it may have been replaced after a cancellation. "
                      "Use the newest link you were given.")


@routes.get("/subscribe/manage/{token}")
@rate_class("public_page")
@html_page
async def manage_page(request: web.Request) -> web.StreamResponse:
    gateway = gateway_of(request)
    sub = await _by_token(request)
    if sub is None:
        return _link_gone(request)
    invoices = await store.history(gateway, sub["id"])
    status = sub["status"]
    context = {
        "status": status, "label": sub["plan_label"], "amount_usd": sub["plan_amount_usd"],
        "every": every(int(sub["plan_interval_sec"])), "customer_email": sub["customer_email"],
        # While an invoice is open its period is the one being billed; "next" means after it.
        "next_billing": when(sub["next_billing_at"]) if status in (ACTIVE, PAUSED) and not sub["open_pay_url"]
        else None,
        "period_end": when(sub["current_period_end"]), "pay_url": sub["open_pay_url"],
        "can_pause": status == ACTIVE, "can_resume": status == PAUSED, "can_cancel": status in (ACTIVE, PAUSED),
        "action_base": enrolment.manage_path(request.match_info["token"]),
        "history": [{"created": when(i["created_at"]), "amount_usd": i["amount_usd"], "status": i["status"],
                     "period": f"{when(i['period_start'])} – {when(i['period_end'])}", "pay_url": i["pay_url"],
                     "paid": f"{i['paid_amount']} {i['paid_coin']}" if i["paid_coin"] else None}
                    for i in invoices if i["status"] != store.MINTING],
    }
    return await _render(request, "manage.html", context, sub["merchant_id"])


async def _act(request: web.Request, action: str) -> web.StreamResponse:
    gateway = gateway_of(request)
    sub = await _by_token(request)
    if sub is None:
        return _link_gone(request)
    await {"pause": enrolment.pause, "resume": enrolment.resume, "cancel": enrolment.cancel}[action](
        gateway, sub["id"])
    fresh = await store.subscription_row(gateway, sub["id"])  # a cancel rotated the token
    raise web.HTTPSeeOther(enrolment.manage_path(fresh["magic_token"]))


@routes.post("/subscribe/manage/{token}/pause")
@rate_class("public_page")
@html_page
async def pause(request: web.Request) -> web.StreamResponse:
    return await _act(request, "pause")


@routes.post("/subscribe/manage/{token}/resume")
@rate_class("public_page")
@html_page
async def resume(request: web.Request) -> web.StreamResponse:
    return await _act(request, "resume")


@routes.post("/subscribe/manage/{token}/cancel")
@rate_class("public_page")
@html_page
async def cancel(request: web.Request) -> web.StreamResponse:
    return await _act(request, "cancel")
