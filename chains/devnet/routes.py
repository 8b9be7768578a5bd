"""The hosted page's development-only pay form: ``POST /pay/{track_id}/devnet-pay``.

Lets a tester pay a payment from the browser with no wallet. Registered only
when the devnet is enabled and the gateway runs in development. The form
field ``amount`` (coin units) overrides the payment's ``pay_amount`` so a
tester can underpay or overpay; each submission is a new transfer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from aiohttp import web

from ...api import (
    AmountError, Conflict, InvalidRequest, NotFound, ValidationError, find_payment, gateway_of, html_page, rate_class,
    read_form,
)
from .adapter import devnet_chain
from .chain import DevnetError

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

routes = web.RouteTableDef()

PAYABLE_STATUSES = frozenset({"waiting", "paying"})


def pay_form_action(gateway: "Gateway", track_id: str, pay_currency: str, status: str) -> str | None:
    """The form's POST URL when the hosted page should show it, else None.

    For the hosted page's template: the form exists only in development with
    the devnet enabled, for a Waiting/Paying payment in a coin it simulates.
    """
    chain = devnet_chain(gateway)
    if chain is None or not gateway.config.is_development or not chain.serves(pay_currency):
        return None
    if str(status).lower() not in PAYABLE_STATUSES:
        return None
    return f"/pay/{quote(track_id, safe='')}/devnet-pay"


@routes.post("/pay/{track_id}/devnet-pay")
@rate_class("public_page")
@html_page
async def devnet_pay(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    chain = devnet_chain(gateway)
    if chain is None:
        raise NotFound()
    track_id = request.match_info["track_id"]
    payment = await find_payment(gateway, track_id)
    if payment is None:
        raise NotFound("payment not found")
    if not payment.is_open or not payment.address:
        raise Conflict("this payment is not waiting for funds")
    coin = gateway.coins.get(payment.pay_currency)
    if coin is None or not chain.serves(coin.symbol):
        raise InvalidRequest(f"the devnet does not simulate {payment.pay_currency}")
    form = await read_form(request)
    typed = str(form.get("amount", "")).strip()
    try:
        units = coin.to_units(typed) if typed else (payment.pay_amount or 0)
    except AmountError as exc:
        raise ValidationError({"amount": str(exc)}) from None
    if units <= 0:
        raise ValidationError({"amount": "this payment has no fixed amount: enter one"})
    try:
        await chain.pay(coin, payment.address, units)
    except DevnetError as exc:
        raise InvalidRequest(str(exc)) from None
    raise web.HTTPSeeOther(f"/pay/{quote(track_id, safe='')}")
