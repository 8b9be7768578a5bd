"""Home (balances), payments: list with the SPEC filters, detail with deposits and receipt, create, cancel, refund.

The detail page reads like Stripe's (issue 49 item 7): amount, fee and net, the transactions with explorer
links, a timeline of what happened (``payment_timeline.py``) with each webhook's attempts and "Send again",
and the receipt as a summary with its raw signed document folded away.

Each page calls the core functions behind the matching JSON routes
(``/dashboard/payments``, ``/dashboard/create-payment``, ``/v1/payment/.../receipt``,
``/v1/payment/.../refund``) with the signed-in merchant as a dashboard principal,
so validation, limits and errors are the API's own.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping
from urllib.parse import quote

from aiohttp import web

from ...api import (
    ApiError, DashboardNotice, FIAT_CURRENCIES, GATEWAY, Principal, ValidationError, brand_choices,
    form_integer, holds_no_connection, merchant_payment_events, pagination, validate,
)
from ...api.merchant import (
    INVOICE, LIST_FIELDS, PAID, PAYMENT_TYPES, REFUND_FIELDS, RefundRequest, STATIC, STATUSES, WHITE_LABEL,
    account_view, cancel_payment, check_key_brand, create_payment, get_payment, issue_receipt, list_payments,
    parse_payment_request, payment_history, refund_payment, require_merchant, servable_coins,
    show_payment,
)
from .amounts import balance_cards, part_paid, rate_text
from .form_errors import error_context, field_errors
from .payment_defaults import chosen_currency, preselected
from .payment_timeline import attempt_result, iso_time, linked_deposits, timeline
from .payout_review import payout_history
from .session import Session, current_session
from .settings import settings_of
from .views import error_text, render, see_other, signed_in
from .webhook_resend import send_again

routes = web.RouteTableDef()

RECENT = 5  # payments and payouts on Home
OPEN = ("Waiting", "Paying")  # a payment still moving: its page follows it
TYPE_LABELS = {INVOICE: "Invoice (hosted page)", WHITE_LABEL: "White-label (you show the address)",
               STATIC: "Static address"}
CREATE_FIELDS = ("type", "currency", "amount", "pay_currency", "order_id", "description", "lifetime", "callback_url",
                 "return_url", "email", "user_id", "brand_id")
# The new-payment form's fields under "More options" (amount and currency stay in view).
MORE_FIELDS = ("type", "pay_currency", "order_id", "description", "lifetime", "callback_url", "return_url", "email",
               "brand_id")


def principal(session: Session) -> Principal:
    """Who is signed in as the API's dashboard principal: the holder (every scope, no allowlist) or the team
    member (their role's scopes; their own second factor is asked on money forms)."""
    return session.principal if session.principal is not None else Principal(merchant_id=session.merchant_id,
                                                                              via="jwt")


def form_values(form: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, str]:
    """The fields as typed (trimmed); empty ones are absent, as in the JSON body the API would get."""
    return {name: value.strip() for name in names if isinstance(value := form.get(name), str) and value.strip()}


def form_body(form: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """A form as the JSON body the API would get: amounts stay text, and an integer field (``lifetime``) is
    read by the one bounded parser (``form_integer``)."""
    body: dict[str, Any] = dict(form_values(form, names))
    if "lifetime" in body:
        body["lifetime"] = form_integer(body["lifetime"], "lifetime")
    return body


@routes.get("/app")
@signed_in
async def home(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    gateway = request.app[GATEWAY]
    merchant = await require_merchant(gateway.db, session.merchant_id)
    recent = await list_payments(gateway, session.merchant_id, limit=RECENT, full=True)
    notices = await gateway.hooks.extra_dashboard_notices(merchant_id=session.merchant_id, principal=principal(session))
    return render(request, session, "dashboard/home.html", {
        "account": account_view(gateway, merchant), "balances": await balance_cards(gateway, session.merchant_id),
        "payments": recent["payments"], "fragment_fallback": True,
        "payouts": (await payout_history(gateway, session.merchant_id, RECENT))["payouts"],
        "panels": gateway.dashboard.entries("home-panels"),
        "alerts": [n for answer in notices for n in answer if isinstance(n, DashboardNotice)],
        # No shop name yet: payers would see a bare "Payment"; the home page asks for it (issue 49 item 4).
        "ask_shop_name": not merchant["display_name"],
    })


@routes.get("/app/payments")
@signed_in(scope="payment:read")
async def payments(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    gateway = request.app[GATEWAY]
    query = {k: v for k, v in request.query.items() if v != ""}
    try:
        values = validate(query, LIST_FIELDS)
        limit, offset = pagination(query, default_limit=20, max_limit=200)
    except ApiError as exc:
        return render(request, session, "dashboard/payments.html",
                      {"error": error_text(exc), "rows": [], "filters": query, "statuses": STATUSES,
                       "types": PAYMENT_TYPES, "page": None}, status=exc.status)
    status = next((s for s in STATUSES if s.upper() == values["status"]), None)
    result = await list_payments(
        gateway, session.merchant_id, status=status, type=values["type"].lower() if values["type"] else None,
        order_id=values["order_id"], currency=values["currency"], limit=limit, offset=offset,
        sort_order=values["sort_order"], full=True)
    keep = {k: v for k, v in query.items() if k not in ("offset", "notice")}
    return render(request, session, "dashboard/payments.html", {
        "rows": result["payments"], "filters": query, "statuses": STATUSES, "types": PAYMENT_TYPES,
        "page": pager(result["total"], limit, offset, keep),
    })


def pager(total: int, limit: int, offset: int, keep: Mapping[str, str]) -> dict[str, Any]:
    """Previous/next links that keep the filters (``keep``)."""
    from urllib.parse import urlencode

    def link(new_offset: int) -> str:
        return "?" + urlencode({**keep, "offset": str(new_offset), "limit": str(limit)})

    return {
        "total": total, "first": offset + 1 if total else 0, "last": min(offset + limit, total),
        "prev": link(max(offset - limit, 0)) if offset > 0 else None,
        "next": link(offset + limit) if offset + limit < total else None,
    }


async def _new_page(request: web.Request, session: Session, *, values: Mapping[str, Any] | None = None,
                    status: int = 200, **context: Any) -> web.Response:
    """Amount and currency first, the rest folded under "More options" (open when one of them is filled in or
    refused, so an error is never hidden)."""
    gateway = request.app[GATEWAY]
    merchant = await require_merchant(gateway.db, session.merchant_id)
    coins = servable_coins(gateway, merchant)
    values = values or {"type": INVOICE}
    errors = context.get("errors") or {}
    return render(request, session, "dashboard/payment_new.html", {
        "types": TYPE_LABELS, "coins": coins, "fiats": FIAT_CURRENCIES,
        "default_currency": preselected(await chosen_currency(gateway, session.merchant_id), coins),
        "brands": await brand_choices(gateway, session.merchant_id),
        "more_open": values.get("type", INVOICE) != INVOICE or any(
            (name in values and name != "type") or name in errors for name in MORE_FIELDS),
        "values": values, **context}, status=status)


@routes.get("/app/payments/new")
@signed_in(scope="payment:create")
async def new_payment(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    return await _new_page(request, session)


@routes.post("/app/payments/new")
@signed_in(scope="payment:create")
async def submit_payment(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    """Every field's problem at once (the form's own checks, then the API's), else the created payment."""
    gateway = request.app[GATEWAY]
    typed = form_values(form, CREATE_FIELDS)
    payment_type = typed.get("type")
    merchant = await require_merchant(gateway.db, session.merchant_id)
    errors = choice_errors(typed, servable_coins(gateway, merchant))
    brand = typed.get("brand_id")
    if brand is not None:
        try:
            await check_key_brand(gateway, session.merchant_id, brand)
        except ValidationError as exc:
            errors.update({"brand_id": "Choose one of your brands from the list."} if field_errors(exc) else {})
    body: dict[str, Any] = {k: v for k, v in typed.items() if k not in errors and k != "brand_id"}
    if payment_type == INVOICE:
        body.pop("user_id", None)
    else:
        for name in ("return_url", "email"):
            body.pop(name, None)
    if "lifetime" in body:
        try:
            body["lifetime"] = form_integer(body["lifetime"], "lifetime")
        except ValidationError as exc:
            errors.update(field_errors(exc))
            del body["lifetime"]
    parsed = None
    try:
        if payment_type in PAYMENT_TYPES:
            try:
                parsed = await parse_payment_request(gateway, body, payment_type, principal(session))
            except ValidationError as exc:
                errors = {**field_errors(exc), **errors}
        if errors or parsed is None:
            return await _new_page(request, session, values=typed, errors=errors, status=400)
        created = await create_payment(gateway, merchant, replace(parsed, brand_id=brand) if brand else parsed)
    except ApiError as exc:
        return await _new_page(request, session, values=typed, status=exc.status, **error_context(exc))
    raise see_other(f"/app/payments/{created['track_id']}", "payment-created")


def choice_errors(typed: Mapping[str, str], coins: list[str]) -> dict[str, str]:
    """The form's pickers, checked: a type, and currencies among those it offers (a forged value is refused
    here in words; the API would refuse it too, some only with a code that names no field)."""
    errors = {}
    if typed.get("type") not in PAYMENT_TYPES:
        errors["type"] = "Choose a payment type."
    fiats = FIAT_CURRENCIES if typed.get("type") == INVOICE else ()
    currency, pay_currency = typed.get("currency"), typed.get("pay_currency")
    if currency is not None and currency not in coins and currency not in fiats:
        errors["currency"] = ("Choose one of your accepted coins" + (" or a fiat currency" if fiats else "")
                              + " from the list.")
    if pay_currency is not None and pay_currency not in coins:
        errors["pay_currency"] = "Choose one of your accepted coins from the list."
    return errors


async def _detail(request: web.Request, session: Session, *, error: str | None = None,
                  status: int = 200) -> web.Response:
    gateway = request.app[GATEWAY]
    track_id = request.match_info["track_id"]
    payment = await show_payment(gateway, session.merchant_id, track_id)
    history = await payment_history(gateway, session.merchant_id, track_id)
    receipt = None
    if payment["status"] == PAID:
        receipt = await issue_receipt(gateway, await get_payment(gateway, session.merchant_id, track_id))
    events_url = live_events_url(payment)
    return render(request, session, "dashboard/payment.html", {
        "payment": payment, "receipt": receipt, "error": error, "events_url": events_url,
        "part_paid": part_paid(gateway, payment), "history": history, "timeline": timeline(payment, history),
        "deposits": linked_deposits(history["deposits"], settings_of(gateway).explorer_urls),
        "rate": rate_text(payment["pay_currency"], payment.get("rate_locked"), payment.get("fiat_currency")),
        "attempt_result": attempt_result, "iso_time": iso_time, "actions": gateway.dashboard.entries("payment-actions"),
    }, status=status, live=events_url is not None)


def live_events_url(payment: Mapping[str, Any]) -> str | None:
    """The stream an open payment's detail follows, any type (docs/decisions.md, "The dashboard's own stream");
    None once closed (nothing moves: no stream, no reload)."""
    if payment["status"] not in OPEN:
        return None
    return f"/app/payments/{quote(payment['track_id'], safe='')}/events"


@routes.get("/app/payments/{track_id}/events", allow_head=False)
@signed_in
@holds_no_connection
async def payment_events(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    """The payment's live state for its merchant's signed-in browser; ends once the session does."""

    async def still_signed_in() -> bool:
        return await current_session(request) is not None

    return await merchant_payment_events(request, session.merchant_id, request.match_info["track_id"],
                                         still_signed_in)


@routes.get("/app/payments/{track_id}")
@signed_in(scope="payment:read")
async def payment(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    return await _detail(request, session)


@routes.post("/app/payments/{track_id}/cancel")
@signed_in(scope="payment:create")
async def cancel(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    track_id = request.match_info["track_id"]
    try:
        await cancel_payment(request.app[GATEWAY], session.merchant_id, track_id)
    except ApiError as exc:
        if exc.status == 404:
            raise
        return await _detail(request, session, error=error_text(exc), status=exc.status)
    raise see_other(f"/app/payments/{track_id}", "payment-cancelled")


@routes.post("/app/payments/{track_id}/refund")
@signed_in(scope="refund:create")
async def refund(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    gateway = request.app[GATEWAY]
    track_id = request.match_info["track_id"]
    await get_payment(gateway, session.merchant_id, track_id)  # 404 for another merchant's payment
    try:
        values = validate(form_body(form, ("destination", "amount", "amount_usd", "description", "external_id")),
                          REFUND_FIELDS)
        await refund_payment(gateway, session.merchant_id, track_id, RefundRequest(
            destination=values["destination"], amount=values["amount"], amount_usd=values["amount_usd"],
            description=values["description"], external_id=values["external_id"], requested_by=session.requester))
    except ApiError as exc:
        return await _detail(request, session, error=error_text(exc), status=exc.status)
    raise see_other(f"/app/payments/{track_id}", "refund-created")


@routes.post("/app/payments/{track_id}/webhooks/{event_id}/send-again")
@signed_in(scope="webhook:manage")
async def send_event_again(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    """"Send again" beside a webhook of this payment (``webhook_resend.py``), for an event of this payment
    only: delivered, failed or never sent, the same event id and body in a fresh round of attempts. An event
    still being sent, or delivered less than a minute ago, is left as it is and the page says so, so a second
    click (or a re-post) queues nothing; past the account's bound the page says so with 429."""
    gateway = request.app[GATEWAY]
    track_id, event_id = request.match_info["track_id"], request.match_info["event_id"]
    history = await payment_history(gateway, session.merchant_id, track_id)  # 404 for another merchant's payment
    if not any(e["event_id"] == event_id for e in history["webhooks"]):
        raise web.HTTPNotFound()
    return await send_again(request, session.merchant_id, event_id, back=f"/app/payments/{quote(track_id, safe='')}",
                            refused=lambda error, status: _detail(request, session, error=error, status=status))
