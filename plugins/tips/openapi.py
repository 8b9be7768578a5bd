"""The tips plugin documents its routes in ``/openapi.json`` (``register_openapi``)."""

from __future__ import annotations

from ...api.openapi import Op, Param, html, obj, redirect

PAGES = "Hosted pages"

OPERATIONS = [
    Op("GET", "/tip/{account_id}", "Tip page of a merchant", PAGES,
       query=(Param("coin", {"type": "string"}, "Preselected coin; used only when the merchant accepts it."),),
       responses={"200": html("The tip form (works without JavaScript)."), "404": html("Unknown account."),
                  "503": html("The merchant accepts no coin that can be paid here.")},
       page=True, errors=(503,),
       description="Public, 60 requests per minute per IP. The payer picks a coin among the merchant's accepted "
                   "coins and an amount; the form posts to the same path."),
    Op("POST", "/tip/{account_id}", "Send a tip: mint an invoice", PAGES,
       body=obj({"coin": {"type": "string"}, "amount": {"type": "string"}}),
       body_media_type="application/x-www-form-urlencoded",
       responses={"303": redirect("To /pay/<track_id> of the new invoice."),
                  "400": html("The form again, with what to fix."), "404": html("Unknown account.")},
       page=True,
       description="Each tip spends one of the IP's plugin.tips.mint_per_minute invoices (default 10)."),
]


def register(registry) -> None:
    for op in OPERATIONS:
        registry.add(op)
