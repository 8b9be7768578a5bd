"""The hosted page's devnet button for BTC_LN: ``POST /pay/{track_id}/lightning-devnet-pay``.

Why: with the devnet backend there is no wallet that can pay its invoices;
this form plays the payer. It settles the payment's invoice at the
simulated node and records the settlement through the plugin's ordinary
path (settlement.record_settlement, the one the poll and the stream use),
then sends the browser back to the page, which now shows Paid. Registered
only in development with the devnet backend; no JavaScript involved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping
from urllib.parse import quote

from aiohttp import web

from ...api import Conflict, NotFound, PayPageForm, find_payment, gateway_of, html_page, rate_class
from ...api.openapi import Op, obj, redirect
from . import settlement, store
from .devnet import DevnetLightningBackend, DevnetLightningError
from .settlement import COIN

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

routes = web.RouteTableDef()

PAY_FORM = Op(
    "POST", "/pay/{track_id}/lightning-devnet-pay", "Pay a BTC_LN payment's invoice on the devnet Lightning node",
    "Hosted pages", body=obj({}, {}), body_media_type="application/x-www-form-urlencoded", errors=(409,),
    development_only=True, page=True, responses={"303": redirect("Back to the payment page.")},
    description="Development only (lightning plugin, devnet backend): settles the invoice without a wallet.",
)


def devnet_backend(gateway: "Gateway") -> DevnetLightningBackend | None:
    """The devnet node when it serves BTC_LN in development, else None."""
    from .receive import lightning_chain

    chain = lightning_chain(gateway)
    if chain is None or not gateway.config.is_development or not isinstance(chain.backend, DevnetLightningBackend):
        return None
    return chain.backend


def page_forms(gateway: "Gateway", payment: Mapping[str, Any]) -> list[PayPageForm] | None:
    if payment.get("pay_currency") != COIN or str(payment.get("status", "")).lower() != "waiting":
        return None
    if devnet_backend(gateway) is None:
        return None
    return [PayPageForm(f"/pay/{quote(str(payment['track_id']), safe='')}/lightning-devnet-pay",
                        "Pay with devnet Lightning", note="Development only: simulated Lightning node")]


@routes.post("/pay/{track_id}/lightning-devnet-pay")
@rate_class("public_page")
@html_page
async def devnet_pay(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    backend = devnet_backend(gateway)
    if backend is None:
        raise NotFound()
    track_id = request.match_info["track_id"]
    payment = await find_payment(gateway, track_id)
    if payment is None:
        raise NotFound("payment not found")
    invoice = await store.invoice_for_payment(gateway, track_id)
    if not payment.is_open or invoice is None:
        raise Conflict("this payment is not waiting for a Lightning payment")
    try:
        state = await backend.settle(invoice.bolt11)
    except DevnetLightningError as exc:
        raise Conflict(str(exc)) from None
    await settlement.record_settlement(gateway, state)
    raise web.HTTPSeeOther(f"/pay/{quote(track_id, safe='')}")
