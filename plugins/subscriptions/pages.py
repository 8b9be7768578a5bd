"""The customer's pages (SPEC 4.14): enrol at ``/subscribe/{plan_id}``, manage at ``/subscribe/manage/{token}``.

Plain HTML forms, no JavaScript (but a captcha's widget when the operator
configured one): every button is a POST form answered with a 303 to the
page to show next (post/redirect/get, so a reload never repeats an action).
Limited to 60 requests per minute per IP (the ``public_page`` class, SPEC 8).

Enrolling (``checkout.py``) passes the ``check_public_form`` hook first (the
captcha plugin's check), then opens the first period's invoice and sends the
customer straight to its hosted page; the subscription stays PENDING until
that invoice is paid, and the invoice's "Return to merchant" link leads to
the manage page. The manage page is reached only through its magic token;
after a cancel the customer is sent to the new token's page, and the old
link answers 404.
"""

from __future__ import annotations

import secrets
from typing import Any, Mapping

import aiohttp_jinja2
from aiohttp import web

from ...api import (
    ApiError, Field, Forbidden, InvalidRequest, SignInWidget, ValidationError, check_public_form, client_ip,
    form_widget, format_timestamp, gateway_of, gettext as _, html_page, ngettext, page_branding_for,
    page_security_headers, rate_class, read_form, validate, widget_token,
)
from . import checkout, enrolment, store
from .store import ACTIVE, PAUSED, PENDING

routes = web.RouteTableDef()

FORM_FIELDS = [Field("email", "email", max_len=254), Field("customer_ref", max_len=128)]


def when(timestamp: Any) -> str | None:
    """A date the customer reads, in the page's language (``format_timestamp``)."""
    return None if timestamp is None else format_timestamp(int(timestamp))


def every(seconds: int) -> str:
    """The interval in words a customer reads ("30 days", "1 hour", "90 minutes" stays in seconds)."""
    if seconds % 86400 == 0:
        return ngettext("%(num)d day", "%(num)d days", seconds // 86400)
    if seconds % 3600 == 0:
        return ngettext("%(num)d hour", "%(num)d hours", seconds // 3600)
    return ngettext("%(num)d second", "%(num)d seconds", seconds)


async def _render(request: web.Request, template: str, context: Mapping[str, Any], merchant_id: str,
                  status: int = 200, widget: SignInWidget | None = None, brand_id: str | None = None) -> web.Response:
    """A customer page, branded as its plan (``brand_id``, else the default brand); ``widget`` (a captcha) adds
    its script, by nonce and origin, to that page only."""
    branding = await page_branding_for(gateway_of(request), merchant_id, brand_id)
    nonce = secrets.token_urlsafe(16) if widget else None
    response = aiohttp_jinja2.render_template(f"subscriptions/{template}", request, {
        **context, "branding": branding, "widget": widget, "nonce": nonce}, status=status)
    return page_security_headers(response, nonce, branding, widget.origin if widget else None)


async def _form_page(request: web.Request, plan: Mapping[str, Any], *, values: Mapping[str, Any] | None = None,
                     errors: Mapping[str, str] | None = None, status: int = 200) -> web.Response:
    """The enrolment form, with the captcha widget when a plugin asks for one (``form_widget``)."""
    return await _render(request, "subscribe.html", {**_plan_context(plan), "values": values or {},
                                                     "errors": errors or {}}, plan["merchant_id"], status,
                         widget=await form_widget(gateway_of(request)), brand_id=plan["brand_id"])


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
    return _not_found(request, _("Plan not available"),
                      _("This subscription plan does not exist or is no longer offered. "
                        "Ask the merchant for a new link."))


async def _form(request: web.Request) -> Mapping[str, Any]:
    return {k: v for k, v in (await read_form(request)).items() if isinstance(v, str)}


@routes.get("/subscribe/{plan_id}")
@rate_class("public_page")
@html_page
async def subscribe_page(request: web.Request) -> web.StreamResponse:
    plan = await _enabled_plan(request)
    if plan is None:
        return _plan_gone(request)
    return await _form_page(request, plan)


@routes.post("/subscribe/{plan_id}")
@rate_class("public_page")
@html_page
async def subscribe(request: web.Request) -> web.StreamResponse:
    plan = await _enabled_plan(request)
    if plan is None:
        return _plan_gone(request)
    form = await _form(request)
    values = {k: form.get(k, "")[:256] for k in ("email", "customer_ref")}
    gateway = gateway_of(request)
    try:
        clean = validate(form, FORM_FIELDS)
        await check_public_form(gateway, "subscribe", {"turnstile_token": widget_token(form)},
                                client_ip(request))
        pay_url = await checkout.enrol_pending(gateway, plan["id"], customer_ref=clean["customer_ref"],
                                               customer_email=clean["email"], client_ip=client_ip(request))
    except ValidationError as exc:
        return await _form_page(request, plan, values=values, errors=exc.detail or {}, status=400)
    except Forbidden as exc:  # the captcha (or another check_public_form) refused
        return await _form_page(request, plan, values=values, errors={"captcha": exc.message}, status=exc.status)
    except checkout.PendingCapReached as exc:
        response = await _render(request, "busy.html", {"label": plan["label"], "minutes": -(-exc.retry_after // 60)},
                                 plan["merchant_id"], status=429, brand_id=plan["brand_id"])
        response.headers["Retry-After"] = str(exc.retry_after)
        return response
    except InvalidRequest as exc:
        if exc.code == enrolment.PLAN_MISSING:  # turned off while the form was open
            return _plan_gone(request)
        raise
    raise web.HTTPSeeOther(pay_url)


async def _by_token(request: web.Request) -> Mapping[str, Any] | None:
    try:
        return await enrolment.by_token(gateway_of(request), request.match_info["token"])
    except ApiError:
        return None


def _link_gone(request: web.Request) -> web.Response:
    return _not_found(request, _("Link not valid"),
                      _("This subscription link is not valid: it may have been replaced after a cancellation. "
                        "Use the newest link you were given."))


@routes.get("/subscribe/manage/{token}")
@rate_class("public_page")
@html_page
async def manage_page(request: web.Request) -> web.StreamResponse:
    sub = await _by_token(request)
    if sub is None:
        return _link_gone(request)
    return await _manage(request, sub)


async def _manage(request: web.Request, sub: Mapping[str, Any], *, error: str | None = None,
                  status_code: int = 200) -> web.Response:
    """The manage page of ``sub``; ``error``: why the button just pressed changed nothing."""
    gateway = gateway_of(request)
    invoices = await store.history(gateway, sub["id"])
    status = sub["status"]
    context = {
        "status": status, "label": sub["plan_label"], "amount_usd": sub["plan_amount_usd"],
        "every": every(int(sub["plan_interval_sec"])), "customer_email": sub["customer_email"],
        # While an invoice is open its period is the one being billed; "next" means after it.
        "next_billing": when(sub["next_billing_at"]) if status in (ACTIVE, PAUSED) and not sub["open_pay_url"]
        else None,
        "period_end": when(sub["current_period_end"]), "pay_url": sub["open_pay_url"],
        "can_pause": status == ACTIVE, "can_resume": status == PAUSED,
        "can_cancel": status in (ACTIVE, PAUSED, PENDING), "error": error,
        "action_base": enrolment.manage_path(request.match_info["token"]),
        "history": [{"created": when(i["created_at"]), "amount_usd": i["amount_usd"], "status": i["status"],
                     "period": f"{when(i['period_start'])} – {when(i['period_end'])}", "pay_url": i["pay_url"],
                     "paid": f"{i['paid_amount']} {i['paid_coin']}" if i["paid_coin"] else None}
                    for i in invoices if i["status"] != store.MINTING],
    }
    return await _render(request, "manage.html", context, sub["merchant_id"], status_code,
                         brand_id=sub["plan_brand_id"])


async def _act(request: web.Request, action: str) -> web.StreamResponse:
    gateway = gateway_of(request)
    sub = await _by_token(request)
    if sub is None:
        return _link_gone(request)
    try:
        await {"pause": enrolment.pause, "resume": enrolment.resume, "cancel": enrolment.cancel}[action](
            gateway, sub["id"])
    except InvalidRequest as exc:  # a page left open while the state moved on: show the state, say why
        if exc.code not in enrolment.STATE_CODES:
            raise
        return await _manage(request, await store.subscription_row(gateway, sub["id"]), status_code=400, error=_(
            "This change is not possible for this subscription in its current state, shown below."))
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
