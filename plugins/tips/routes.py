"""The tip page, ``GET /tip/{account_id}`` (SPEC 4.14), and its form's ``POST``.

Keyed by the merchant's public account id. The payer picks a coin among the
merchant's accepted coins that can be paid here (``?coin=`` preselects one
only when it is among them, else the first) and types an amount; the form
POSTs (a crawler's GET never mints) and a valid tip 303-redirects to the new
invoice's hosted page. No script anywhere. Both routes are public pages (60
requests per minute per IP) and each invoice spends the IP's mint budget
(``[plugin.tips] mint_per_minute``, as for payment links); a tip left unpaid
is pruned ``[plugin.tips] unpaid_retention_days`` after it expired.
"""

from __future__ import annotations

from typing import Any, Sequence

from aiohttp import web

from ...api import (
    AmountError, MerchantRecord, ValidationError, create_invoice, gateway_of, html_page, merchant_by_account_id,
    page_branding_for, gettext as _, parse_decimal, rate_class, read_form, receivable_coins, render_page, translate,
)
from ..links.minting import pay_page, spend_mint_budget
from ..links.settings import settings_of
from .settings import PLUGIN_NAME

routes = web.RouteTableDef()

MAX_FIELD_TEXT = 40
TIP_DESCRIPTION = "Tip"
TIP_ORDER_ID = "tip"


def _not_found(request: web.Request) -> web.Response:
    return render_page(request, "error.html", {
        "title": _("Tip page not found"), "message": _("There is no tip page here. Check the link you were given.")},
        status=404)


async def _page(request: web.Request, merchant: MerchantRecord, coins: Sequence[str], coin: str, *,
                amount: str = "", error: str | None = None, status: int = 200) -> web.Response:
    gateway = gateway_of(request)
    branding = await page_branding_for(gateway, merchant.merchant_id)
    return render_page(request, "tips/tip.html", {
        "account_id": merchant.account_id, "coins": [(symbol, coin_label(gateway, symbol)) for symbol in coins],
        "selected": coin, "amount": amount, "error": error,
    }, status=status, branding=branding)


def coin_label(gateway: Any, symbol: str) -> str:
    """A coin as payers say it (``USDT · Ethereum (ERC-20)``), never its internal symbol."""
    coin = gateway.coins.get(symbol)
    return symbol if coin is None else f"{coin.payer_asset} · {coin.payer_network}"


async def _tippable(request: web.Request) -> tuple[MerchantRecord, tuple[str, ...]] | web.Response:
    """The merchant of the page and the coins a tip can be paid in, or the error page
    (404 no usable page, 503 no coin to tip in) that both routes answer instead."""
    gateway = gateway_of(request)
    merchant = await merchant_by_account_id(gateway, request.match_info["account_id"])
    if merchant is None or not merchant.enabled:
        return _not_found(request)
    coins = receivable_coins(gateway, merchant)
    if not coins:
        return render_page(request, "error.html", {
            "title": _("Tips unavailable"), "message": _("This merchant accepts no tips right now.")}, status=503)
    return merchant, coins


def _chosen(coins: Sequence[str], text: str | None) -> str | None:
    symbol = (text or "").strip().upper()
    return symbol if symbol in coins else None


@routes.get("/tip/{account_id}", allow_head=False)
@rate_class("public_page")
@html_page
async def tip_page(request: web.Request) -> web.StreamResponse:
    found = await _tippable(request)
    if isinstance(found, web.Response):
        return found
    merchant, coins = found
    coin = _chosen(coins, request.query.get("coin")) or coins[0]
    return await _page(request, merchant, coins, coin)


@routes.post("/tip/{account_id}")
@rate_class("public_page")
@html_page
async def tip_submit(request: web.Request) -> web.StreamResponse:
    found = await _tippable(request)
    if isinstance(found, web.Response):
        return found
    merchant, coins = found
    form = await read_form(request)  # the edge's checks (web/form_body.py); a non-form body reads as empty
    coin_text = form.get("coin")
    amount_text = form.get("amount")
    coin = _chosen(coins, coin_text if isinstance(coin_text, str) else None)
    typed = amount_text if isinstance(amount_text, str) else ""
    shown = typed[:MAX_FIELD_TEXT]  # echoed in the form only: the amount itself is never cut
    if coin is None:
        return await _page(request, merchant, coins, coins[0], amount=shown,
                           error=_("Choose one of the coins offered."), status=400)
    gateway = gateway_of(request)
    try:
        value = parse_decimal(typed)  # the one strict parser: no spaces, no comma, no exponent
        if value <= 0:
            raise AmountError("must be greater than 0")  # a message the catalogue has (core/money/amounts.py)
        gateway.coins.require(coin).to_units(value)  # and the coin's maximum
    except AmountError as exc:
        return await _page(request, merchant, coins, coin, amount=shown,
                           error=_("The amount %(problem)s. Enter an amount of %(coin)s, for example 0.01.",
                                   problem=translate(exc.problem), coin=coin), status=400)
    await spend_mint_budget(request, PLUGIN_NAME)
    try:
        invoice = await create_invoice(
            gateway, merchant.merchant_id, amount=value, currency=coin, coins=[coin], description=TIP_DESCRIPTION,
            order_id=TIP_ORDER_ID, unpaid_retention_seconds=settings_of(gateway, PLUGIN_NAME).unpaid_retention_seconds)
    except ValidationError as exc:  # below the coin's smallest payment: the payer's amount to fix
        problem = "; ".join(map(translate, (exc.detail or {}).values())) or translate(exc.message)
        return await _page(request, merchant, coins, coin, amount=shown,
                           error=_("The amount %(problem)s.", problem=problem), status=400)
    raise web.HTTPSeeOther(pay_page(invoice.track_id), headers={"Cache-Control": "no-store"})
