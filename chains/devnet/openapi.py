"""The devnet documents its own route in ``/openapi.json`` (``register_openapi``), like any plugin."""

from __future__ import annotations

from ...api import hookimpl
from ...api.openapi import Op, obj, redirect
from ...api.hooks import OperationRegistry

PAY_FORM = Op(
    "POST", "/pay/{track_id}/devnet-pay", "Pay from the hosted page on the simulated chain", "Hosted pages",
    body=obj({}, {"amount": {"type": "string", "description": "Coin units; default the payment's pay_amount."}}),
    body_media_type="application/x-www-form-urlencoded", errors=(409,), development_only=True, page=True,
    responses={"303": redirect("Back to the payment page.")},
    description="Development only (devnet plugin): moves simulated money without authentication.",
)


@hookimpl
def register_openapi(registry: OperationRegistry) -> None:
    # Documented whenever the plugin is loaded: the served document keeps only
    # routes the app registered, so a production server does not advertise it.
    registry.add(PAY_FORM)
