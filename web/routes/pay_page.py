"""The hosted payment page, ``GET /pay/{track_id}`` (SPEC 4.14), and its stylesheet.

Server-rendered and complete without JavaScript: while the payment is open
(Waiting, Paying) a refresh meta tag inside ``<noscript>`` polls every 15
seconds (SPEC 4.14; a browser running scripts ignores it and follows the
page's event stream instead, so screen-reader users with scripts on are never
pulled from the page) and a "Check again" link reloads at once, and the
pay-with-any-coin picker is a GET form whose ``?pay_currency=`` this handler
applies and then 303-redirects to the clean URL. Only invoices have a hosted
page (only they have a ``payment_url``); every other track id is the same
HTML 404 as an unknown one.

The template receives a context built here field by field, never the whole
payment view, so nothing private (callback URL, customer email, user id)
can reach the page by accident.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence
from urllib.parse import quote

import aiohttp_jinja2
from aiohttp import hdrs, web
from markupsafe import Markup

from ...core.payments import service as svc
from ...core.pages import services as page_services
from ...core.infra.bounded import LruMap, values_key
from ...core.types.errors import ApiError, NotFound
from ...core.gateway import Gateway
from ...core.infra.maintenance import refuse_in_maintenance
from ...core.types.pages import accent_stylesheet
from ...core.money.coins import Coin
from ...core.money.prices import PRICES, usable_quote, usd_value
from ...core.pages.qr import MAX_QR_DATA, qr_svg
from ...core.payments.receive import qr_payload
from ..keys import gateway_of
from ..middlewares import client_ip, count_request, rate_class
from ..live_state import paid_and_due, safe_return_url, shown_status
from .pay_events import events_path
from ..page_slots import CACHED_PAGES, SlottedTemplate
from ..pages import html_page, page_security_headers, security_headers
from ..i18n import gettext as _
from ...core.types.services import ServiceKey

routes = web.RouteTableDef()

STYLESHEET = Path(__file__).resolve().parent.parent / "static" / "orbchain.css"
# The page's one script (countdown, live status): a file, so the nonce'd tag is all the page carries.
SCRIPT = STYLESHEET.with_name("pay.js")
REFRESH_SECONDS = 15
MAX_SYMBOL_LENGTH = 20
# What differs between two views of the same page (web/page_slots.py).
PER_VIEW = ("nonce", "remaining", "remaining_seconds")
HTML = "text/html; charset=utf-8"


@lru_cache(maxsize=1024)
def page_url(track_id: str) -> str:
    """The page's own URL (quoted once per payment, not on every reload)."""
    return f"/pay/{quote(track_id, safe='')}"


def countdown_text(seconds: int) -> str:
    """``mm:ss`` under an hour, ``h:mm:ss`` from one hour on; never negative."""
    seconds = max(0, seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def _utc(timestamp: int) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


@lru_cache(maxsize=1024)
def expiry_iso(expires_at: int) -> str:
    """The machine-readable expiry (``<time datetime>``), formatted once per payment; the text the payer reads
    is the template's ``payer_datetime``, in their language."""
    return _utc(expires_at).isoformat().replace("+00:00", "Z")


def coin_label(coin: Coin) -> str:
    """A coin as the picker lists it, asset and network as payers say them (``USDT · Ethereum (ERC-20)``)."""
    return f"{coin.payer_asset} · {coin.payer_network}"


@lru_cache(maxsize=1024)
def picker_options(coins: tuple[Coin, ...], selected: str | None) -> Markup:
    """The coin picker's ``<option>`` list, built once per coin list and selection (it has one per coin)."""
    return Markup("").join(
        Markup('<option value="{0}"{1}>{2}</option>').format(
            coin.symbol, Markup(" selected") if coin.symbol == selected else "", coin_label(coin))
        for coin in coins)


def _transactions(gateway: Gateway, view: Mapping[str, Any],
                  deposits: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    # payment_view builds ``transactions`` from these deposit rows in order: pair them for the threshold.
    return [
        {"tx_hash": tx["tx_hash"], "amount": tx["amount"], "coin": payer_asset(gateway, tx["coin"]),
         "status": tx["status"],
         "confirmations": tx["confirmations"], "required": int(deposit["threshold"])}
        for tx, deposit in zip(view["transactions"], deposits)
    ]


def payer_asset(gateway: Gateway, symbol: str) -> str:
    """The asset a payer knows (``USDT``) for a coin symbol; an unregistered one stays as it is."""
    coin = gateway.coins.get(symbol)
    return symbol if coin is None else coin.payer_asset


async def usd_estimate(gateway: Gateway, view: Mapping[str, Any]) -> str | None:
    """The USD value of a payment priced in a coin (a Lightning tip, a coin invoice: no fiat amount of its own)
    at the last good quote, to the cent from integer units; None without a price. Decorative: never fails the page."""
    service = gateway.services.get(PRICES)
    if service is None or not view["pay_amount"]:
        return None
    coin = gateway.coins.require(view["pay_currency"])
    try:
        quote = usable_quote((await service.quotes()).get(coin.symbol), gateway.clock())
    except Exception:  # noqa: BLE001 - a price outage leaves the estimate out, nothing else
        return None
    if quote is None:
        return None
    return format(usd_value(coin.to_units(view["pay_amount"]), coin.decimals, quote.usd), ",f")


def plugin_forms(gateway: Gateway, view: Mapping[str, Any]) -> list[Any]:
    """Forms plugins add to an open payment's page (``extra_pay_page_forms`` hook)."""
    return [form for forms in gateway.hooks.extra_pay_page_forms(payment=view) for form in forms]


async def content_context(
    gateway: Gateway, view: Mapping[str, Any], deposits: Sequence[Mapping[str, Any]], status: str
) -> dict[str, Any]:
    """What ``pay.html`` shows that the payment alone decides (its shown ``status`` included): no hook
    answer, no per-view value (``forms``, ``remaining`` and ``remaining_seconds`` are left empty).
    The QR is rendered in the gateway's CPU pool (``core/pages/qr.py``), never on the event loop."""
    is_open = status in svc.OPEN_STATUSES
    address = view["address"]
    expires_at = view["expires_at"]
    accepted = view.get("accepted_coins") or []
    coin = gateway.coins.require(view["pay_currency"])  # what the payment is in: registered, or no page at all
    context: dict[str, Any] = {
        "track_id": view["track_id"],
        "page_url": page_url(view["track_id"]),
        "status": status,
        "is_open": is_open,
        "refresh_seconds": REFRESH_SECONDS if is_open else None,
        "pay_amount": view["pay_amount"],
        "pay_currency": view["pay_currency"],
        # The coin as payers say it (asset, network): never the internal symbol on the page.
        "pay_asset": coin.payer_asset,
        "pay_network": coin.payer_network,
        "is_token": coin.contract is not None,
        "amount_fiat": view.get("amount_fiat"),
        "fiat_currency": view.get("fiat_currency"),
        "fiat_estimated": False,
        "description": view["description"],
        "order_id": view["order_id"],
        "address": address if is_open else None,
        "qr_svg": None,
        "pay_request": None,
        "wallet_uri": None,
        "transactions": _transactions(gateway, view, deposits),
        "paid_amount": None,
        "due_amount": None,
        "underpaid": False,
        "excess_amount": None,
        "events_url": events_path(view["track_id"]) if is_open else None,
        "picker_coins": accepted if status == svc.WAITING and len(accepted) > 1 else [],
        "picker_options": None,
        "return_url": safe_return_url(view.get("return_url")) if status == svc.PAID else None,
        "cancel_url": view.get("cancel_url") if status in (svc.WAITING, svc.EXPIRED, svc.CANCELLED) else None,
        "forms": [],
        "remaining": None,
        "remaining_seconds": None,
        "expires_iso": None,
        "expires_at": None,
        "paid_at": None,
    }
    if deposits:
        pay_units = None if view["pay_amount"] is None else gateway.coins.require(view["pay_currency"]).to_units(
            view["pay_amount"])
        context["paid_amount"], context["due_amount"] = paid_and_due(gateway, view["pay_currency"], pay_units,
                                                                     deposits)
        context["underpaid"] = is_open and is_underpaid(context["paid_amount"], context["due_amount"])
        if status == svc.PAID and pay_units is not None and context["paid_amount"] != "0":
            excess = coin.to_units(context["paid_amount"]) - pay_units
            context["excess_amount"] = coin.format(excess) if excess > 0 else None
    if context["picker_coins"]:
        known = tuple(gateway.coins.get(symbol) for symbol in accepted)
        context["picker_options"] = picker_options(tuple(c for c in known if c is not None), view["pay_currency"])
    if is_open:
        # No address (an invoice-style target): the plugin's payload is what the payer uses.
        payload = qr_payload(gateway, still_due(view, context["due_amount"]), coin)
        context["qr_svg"] = await qr_svg(gateway.cpu, payload, scale=5) if payload and len(payload) <= MAX_QR_DATA \
            else None
        if not address and payload:
            context["pay_request"] = payload
        elif payload and payload != address:  # the chain's URI: the QR and the "Open in wallet" link agree
            context["wallet_uri"] = payload
    if is_open and not context["amount_fiat"]:
        estimate = await usd_estimate(gateway, view)
        if estimate is not None:
            context.update(amount_fiat=estimate, fiat_currency="USD", fiat_estimated=True)
    if is_open and expires_at is not None:
        context["expires_iso"], context["expires_at"] = expiry_iso(expires_at), expires_at
    if status == svc.PAID and view.get("paid_at"):
        context["paid_at"] = view["paid_at"]
    return context


def is_underpaid(paid_amount: str | None, due_amount: str | None) -> bool:
    """Part of the amount arrived and part is still due: the page's own state (the API's status stays Paying)."""
    return paid_amount not in (None, "0") and due_amount not in (None, "0")


def still_due(view: Mapping[str, Any], due_amount: str | None) -> Mapping[str, Any]:
    """The view the QR and wallet link are written from: after a partial payment they ask for what is still
    due (``paid_and_due``, exact base units), not the whole amount again; nothing due keeps the view as is."""
    if due_amount is None or due_amount == "0" or due_amount == view["pay_amount"]:
        return view
    return {**view, "pay_amount": due_amount}


def wants_forms(context: Mapping[str, Any]) -> bool:
    """Whether plugins are asked for forms: an open page with something to pay (an address or a request)."""
    return bool(context["is_open"] and (context["address"] or context["pay_request"]))


def countdown(context: Mapping[str, Any], expires_at: int | None, now: int) -> dict[str, Any]:
    """The per-view countdown of a Waiting or underpaid page with an expiry (None for the others: once the
    whole amount is on its way, the clock no longer asks the payer to hurry; an underpaid payer still must)."""
    if not (context["status"] == svc.WAITING or context["underpaid"]) or expires_at is None:
        return {"remaining": None, "remaining_seconds": None}
    left = max(0, expires_at - now)
    return {"remaining": countdown_text(left), "remaining_seconds": left}


async def page_context(
    gateway: Gateway, view: Mapping[str, Any], deposits: Sequence[Mapping[str, Any]], now: int
) -> dict[str, Any]:
    """Everything ``pay.html`` shows, and nothing else (built fresh: what a cached view must equal)."""
    context = await content_context(gateway, view, deposits, shown_status(view, now))
    if wants_forms(context):
        context["forms"] = plugin_forms(gateway, view)
    context.update(countdown(context, view["expires_at"], now))
    return context


class PageContent:
    """A page's ``content_context`` and the payment view it came from, built once per content key.

    The key is every column of the payment's row and of its deposits plus
    the shown status (``content_key``), so any change to what the page
    shows is a new key: a status change, a new deposit or confirmation, the
    expiry passing. The QR payload (``decide_qr_payload``, a function of
    the payment view) is computed with the context, so once per key.
    """

    __slots__ = ("view", "context", "wants_forms", "expires_at", "cached")

    def __init__(self, view: dict[str, Any], context: dict[str, Any], cached: bool = True) -> None:
        self.cached = cached  # False: built for one view (an unhashable column), so rendered without the cache
        self.view = view
        self.context = context
        self.wants_forms = wants_forms(context)
        self.expires_at = view["expires_at"]

    @classmethod
    async def build(cls, gateway: Gateway, row: Mapping[str, Any], deposits: Sequence[Mapping[str, Any]],
                    status: str, cached: bool = True) -> "PageContent":
        view = svc.payment_view(gateway, row, deposits)
        return cls(view, await content_context(gateway, view, deposits, status), cached)


def content_key(row: Mapping[str, Any], deposits: Sequence[Mapping[str, Any]], status: str) -> tuple[Any, ...]:
    """What a page's content depends on: the raw row and deposit values and the shown status."""
    return status, *values_key(row, deposits)


PAGE_CONTENTS = ServiceKey[LruMap[Any, PageContent]]("pay_page_contents")


async def page_content(gateway: Gateway, row: Mapping[str, Any], deposits: Sequence[Mapping[str, Any]],
                       now: int) -> PageContent:
    """The payment's ``PageContent``, from this process's bounded cache when its key was seen."""
    status = shown_status(row, now)
    cache = gateway.services.get(PAGE_CONTENTS)
    if cache is None:
        cache = gateway.services[PAGE_CONTENTS] = LruMap(CACHED_PAGES)
    key = content_key(row, deposits, status)
    try:
        content = cache.get(key)
    except TypeError:  # an unhashable column value: build it every time
        return await PageContent.build(gateway, row, deposits, status, cached=False)
    if content is None:
        content = await PageContent.build(gateway, row, deposits, status)
        cache.put(key, content)
    return content


def not_found_page(request: web.Request) -> web.Response:
    response = aiohttp_jinja2.render_template(
        "error.html", request,
        {"title": _("Payment not found"),
         "message": _("This payment link is not valid. Check the link you were given.")},
        status=404,
    )
    return page_security_headers(response)


@routes.get("/pay/{track_id}")
@rate_class("pay_page")
@html_page
async def pay_page(request: web.Request) -> web.StreamResponse:
    gateway = gateway_of(request)
    track_id = request.match_info["track_id"]
    try:
        # The payment, and its deposits only when it has some: one query for an unpaid page.
        row, deposits = await svc.payment_with_deposits(gateway, None, track_id)
    except NotFound:
        return not_found_page(request)
    if row["type"] != svc.INVOICE:
        return not_found_page(request)
    if "pay_currency" in request.query:
        refuse_in_maintenance(gateway)  # a GET that writes: the middleware only refuses write methods (SPEC 7)
        await count_coin_switch(request)
        symbol = request.query["pay_currency"].strip().upper()
        if request.method == "GET" and 0 < len(symbol) <= MAX_SYMBOL_LENGTH:
            try:
                await svc.change_pay_currency(gateway, track_id, symbol)
            except ApiError:
                pass  # SPEC 4.14: invalid choices are silently ignored
        raise web.HTTPSeeOther(page_url(track_id))
    now = gateway.now()
    content = await page_content(gateway, row, deposits, now)
    view = dict(content.view)  # the hooks' own copy: the cached one is shared by every view
    forms = plugin_forms(gateway, view) if content.wants_forms else []
    branding = await page_services.page_branding_for(gateway, row["merchant_id"], view.get("brand_id"), view)
    nonce = secrets.token_urlsafe(16)
    values = countdown(content.context, content.expires_at, now)
    values["nonce"] = nonce

    def context() -> dict[str, Any]:  # only when this content and these answers were never rendered
        return {**content.context, "forms": forms, "branding": branding, **values}

    # The key: the content, then the hooks' answers (they run on every view; a new answer is a new rendering);
    # SlottedTemplate adds the page's language.
    key = (content, tuple(forms), branding) if content.cached else None
    body = _pay_template(gateway).render_bytes(aiohttp_jinja2.get_env(request.app), key, values, context)
    headers = security_headers(nonce, branding, live=content.context["events_url"] is not None)
    return web.Response(body=body, headers={hdrs.CONTENT_TYPE: HTML, **headers})


async def count_coin_switch(request: web.Request) -> None:
    """A coin switch reserves an address: it counts in the public pages' bucket, not only the page's reads."""
    limits = gateway_of(request).config.rate_limits
    if limits.enabled:
        await count_request(request, f"public_page:ip:{client_ip(request)}", limits.public_page_per_minute)


PAGE_TEMPLATE = ServiceKey("pay_page_template", SlottedTemplate)


def _pay_template(gateway: Gateway) -> SlottedTemplate:
    """``pay.html`` rendered once per content (one per gateway, made with the first view)."""
    template = gateway.services.get(PAGE_TEMPLATE)
    if template is None:
        template = gateway.services[PAGE_TEMPLATE] = SlottedTemplate("pay.html", PER_VIEW)
    return template


@routes.get("/assets/orbchain.css")
async def stylesheet(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(STYLESHEET, headers={"Cache-Control": "public, max-age=3600"})


@routes.get("/assets/pay.js")
@rate_class(None)
async def script(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(SCRIPT, headers={"Cache-Control": "public, max-age=3600",
                                             hdrs.CONTENT_TYPE: "text/javascript; charset=utf-8"})


@routes.get("/assets/accent/{color:[0-9a-fA-F]{6}}.css")
async def accent(request: web.Request) -> web.StreamResponse:
    """A brand colour as CSS custom properties; the URL names the colour, so it caches for good."""
    return web.Response(text=accent_stylesheet(request.match_info["color"]), content_type="text/css",
                        headers={"Cache-Control": "public, max-age=31536000, immutable"})
