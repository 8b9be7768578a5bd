"""``GET /l/{slug}`` (SPEC 4.14): a payment link resolved to a fresh invoice, and ``/assets/donate.js``.

Fixed-amount links (a native amount, or a fiat price locked at each mint)
302 to the new invoice's hosted page. Buyer-entered links show an amount
prompt (a GET form, so no script is needed); with ``?amount=`` they mint and
302. A disabled link is a 410 page, an unknown one a 404 page. Every mint is
counted in the link's ``uses`` inside the transaction that stores the
invoice, and spends the visitor IP's mint budget (``settings.py``). Link
previews and prefetches mint nothing, and a browser opening a fixed link
again while its invoice is open gets that invoice (``visitors.py``).

HEAD is not routed: a link checker's HEAD must not mint an invoice.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any, Mapping

from aiohttp import web

from ...api import (
    AmountError, ApiError, Gateway, PaymentView, ValidationError, create_invoice, fiat_decimals, gateway_of,
    html_page, gettext as _, ngettext, page_branding_for, parse_decimal, rate_class, refuse_in_maintenance, render_page,
    translate,
)
from . import store, visitors
from .minting import pay_page, spend_mint_budget
from .settings import PLUGIN_NAME, settings_of

routes = web.RouteTableDef()

DONATE_JS = Path(__file__).resolve().parent / "static" / "donate.js"
DONATE_JS_CACHE = "public, max-age=3600"
MAX_AMOUNT_TEXT = 40  # of a refused amount echoed back into the form (the amount itself is never cut)
NO_STORE = {"Cache-Control": "no-store"}


def _error_page(request: web.Request, status: int, title: str, message: str) -> web.Response:
    return render_page(request, "error.html", {"title": title, "message": message}, status=status)


def _prompt_currency(link: Mapping[str, Any]) -> str:
    """What a buyer-entered amount is in: the link's fiat currency when it has one, else its coin."""
    return link["fiat_currency"] or link["coin"]


def _buyer_amount(gateway: Gateway, link: Mapping[str, Any], text: str) -> Decimal:
    """The typed amount, read by the one strict parser (``money.parse_decimal``: no spaces, no
    comma, no exponent) and bounded by the coin's maximum; ``ValueError`` with a message the payer
    can act on. Nothing is cut or guessed: "1,5" is refused, not read as 1.5."""
    try:
        amount = parse_decimal(text)
    except AmountError as exc:
        raise ValueError(_("The amount %(problem)s.", problem=translate(exc.problem))) from None
    if amount <= 0:
        raise ValueError(_("Enter an amount greater than 0."))
    if link["fiat_currency"]:
        places = fiat_decimals(link["fiat_currency"])  # cents (a whole yen), not fractions of them
        exponent = amount.normalize().as_tuple().exponent
        if isinstance(exponent, int) and -exponent > places:
            raise ValueError(ngettext("Use at most %(num)d decimal.", "Use at most %(num)d decimals.", places))
        return amount  # its coin amount is bounded when the invoice prices it (a ValidationError)
    try:
        gateway.coins.require(link["coin"]).to_units(amount)
    except AmountError as exc:
        raise ValueError(_("The amount %(problem)s.", problem=translate(exc.problem))) from None
    return amount


async def _prompt(request: web.Request, link: Mapping[str, Any], *, amount: str = "", error: str | None = None,
                  status: int = 200) -> web.Response:
    gateway = gateway_of(request)
    branding = await page_branding_for(gateway, link["merchant_id"], link["brand_id"])
    coin = gateway.coins.get(link["coin"])
    asset = link["coin"] if coin is None else coin.payer_asset  # the asset payers know, never the internal symbol
    currency = _prompt_currency(link)
    return render_page(request, "links/prompt.html", {
        "slug": link["slug"], "description": link["description"], "coin": link["coin"], "currency": currency,
        "coin_name": asset if coin is None else f"{asset} ({coin.payer_network})",
        "currency_name": asset if currency == link["coin"] else currency, "amount": amount, "error": error,
    }, status=status, branding=branding)


async def _mint(request: web.Request, link: Mapping[str, Any], amount: Decimal, currency: str, *,
                remember: bool = False) -> web.StreamResponse:
    """Mint the invoice and 302 to it; ``remember``: this browser finds it again while it is open."""
    gateway = gateway_of(request)
    refuse_in_maintenance(gateway)  # a GET that writes: the middleware only refuses write methods (SPEC 7)
    await spend_mint_budget(request, PLUGIN_NAME)

    async def count_use(payment: PaymentView) -> None:
        await store.count_use(gateway, link["id"], payment.track_id)

    invoice = await create_invoice(
        gateway, link["merchant_id"], amount=amount, currency=currency, coins=[link["coin"]],
        lifetime_minutes=None if link["lifetime_minutes"] is None else int(link["lifetime_minutes"]),
        description=link["description"], order_id=f"link:{link['slug']}", in_transaction=count_use,
        brand_id=link["brand_id"],
        unpaid_retention_seconds=settings_of(gateway, PLUGIN_NAME).unpaid_retention_seconds)
    response = web.HTTPFound(pay_page(invoice.track_id), headers=NO_STORE)
    if remember and invoice.expires_at is not None:
        visitors.remember(gateway, request, response, link, invoice.track_id, invoice.expires_at - gateway.now())
    raise response


def _fixed_price(gateway: Gateway, link: Mapping[str, Any]) -> tuple[Decimal, str] | None:
    """(amount, currency) of a fixed-amount or fiat-priced link; None for a buyer-entered one."""
    if link["amount"] is not None:
        coin = gateway.coins.require(link["coin"])
        return Decimal(coin.format(gateway.db.to_int(link["amount"]))), link["coin"]
    if link["amount_fiat"] is not None:
        return Decimal(link["amount_fiat"]), link["fiat_currency"]
    return None


async def _preview(request: web.Request, link: Mapping[str, Any], price: tuple[Decimal, str]) -> web.Response:
    """What a link unfurler or prefetch gets instead of a new invoice (``visitors.py``)."""
    branding = await page_branding_for(gateway_of(request), link["merchant_id"], link["brand_id"])
    amount, currency = price
    return render_page(request, "links/preview.html", {
        "slug": link["slug"], "description": link["description"], "amount": format(amount, "f"),
        "currency": currency}, branding=branding)


@routes.get("/l/{slug}", allow_head=False)
@rate_class("public_page")
@html_page
async def resolve(request: web.Request) -> web.StreamResponse:
    gateway = gateway_of(request)
    link = await store.by_slug(gateway, request.match_info["slug"])
    if link is None:
        return _error_page(request, 404, _("Payment link not found"),
                           _("This payment link is not valid. Check the link you were given."))
    if not link["enabled"]:
        return _error_page(request, 410, _("Payment link disabled"),
                           _("This payment link is no longer active. Ask the merchant for a new one."))
    try:
        price = _fixed_price(gateway, link)
        if price is not None:
            if visitors.is_preview(request):
                return await _preview(request, link, price)
            again = await visitors.open_invoice(gateway, request, link)
            if again is not None:  # the same browser, its invoice still open: that one, not a new one
                raise web.HTTPFound(pay_page(again), headers=NO_STORE)
            return await _mint(request, link, *price, remember=True)
        text = request.query.get("amount", "")
        if not text or visitors.is_preview(request):  # a preview of a prefilled link mints nothing either
            return await _prompt(request, link, amount=text[:MAX_AMOUNT_TEXT])
        try:
            return await _mint(request, link, _buyer_amount(gateway, link, text), _prompt_currency(link))
        except ValueError as exc:
            error = str(exc)
        except ValidationError as exc:  # priced above the coin's maximum or below its smallest payment: to fix
            error = _("The amount %(problem)s.", problem="; ".join(map(translate, (exc.detail or {}).values()))
                      or translate(exc.message))
        return await _prompt(request, link, amount=text[:MAX_AMOUNT_TEXT], error=error, status=400)
    except ApiError as exc:
        if exc.status == 410:  # disabled while this request minted: the invoice rolled back
            return _error_page(request, 410, _("Payment link disabled"),
                               _("This payment link is no longer active. Ask the merchant for a new one."))
        raise


@routes.get("/assets/donate.js")
@rate_class(None)
async def donate_js(request: web.Request) -> web.StreamResponse:
    """The donation button script (SPEC 4.14): static, cacheable, loadable from any site."""
    return web.FileResponse(DONATE_JS, headers={
        "Content-Type": "text/javascript; charset=utf-8", "Cache-Control": DONATE_JS_CACHE,
        "Cross-Origin-Resource-Policy": "cross-origin", "X-Content-Type-Options": "nosniff",
    })
