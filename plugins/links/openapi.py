"""The links plugin documents its routes in ``/openapi.json`` (``register_openapi``)."""

from __future__ import annotations

from ...api.openapi import Op, Param, envelope, html, obj, redirect, ref

TAG = "Dashboard: payment links"
PAGES = "Hosted pages"
JWT = ("jwt",)
STRING, BOOLEAN = {"type": "string"}, {"type": "boolean"}
NULLABLE_STRING = {"anyOf": [STRING, {"type": "null"}]}
FIAT = {"type": "string", "enum": ["USD", "EUR", "GBP", "JPY", "CAD", "AUD", "CHF", "CNY", "INR", "RUB"]}
LIFETIME = {"type": "integer", "minimum": 1, "maximum": 43200}

LINK = obj({
    "id": STRING, "slug": {"type": "string", "minLength": 12, "maxLength": 12}, "url": STRING, "coin": STRING,
    "amount": NULLABLE_STRING, "amount_fiat": NULLABLE_STRING,
    "fiat_currency": {"anyOf": [FIAT, {"type": "null"}]}, "enabled": BOOLEAN,
    "uses": {"type": "integer", "minimum": 0, "description": "Invoices minted through the link."},
    "lifetime": {"anyOf": [LIFETIME, {"type": "null"}]}, "description": NULLABLE_STRING,
    "brand_id": {"anyOf": [STRING, {"type": "null"}], "description": "The brand its invoices wear; null: the default."},
    "created_at": {"$ref": "#/components/schemas/Timestamp"},
})

OPERATIONS = [
    Op("POST", "/dashboard/payment-links", "Create a payment link", TAG, envelope(ref("PaymentLink")), auth=JWT,
       body=obj({"coin": STRING}, {
           "amount": {"type": "string", "description": "Fixed amount in coin units; exclusive with amount_fiat."},
           "amount_fiat": {"type": "string", "description": "Fixed fiat price, locked per minted invoice."},
           "fiat_currency": FIAT, "lifetime": LIFETIME, "description": {"type": "string", "maxLength": 500},
           "brand_id": {"type": "string", "maxLength": 64,
                        "description": "A live brand of this account (GET /dashboard/brands): the link's pages and "
                                       "invoices wear it, as a key's brand tags its payments."}}),
       description="Omit amount and amount_fiat for a buyer-entered link (the payer types the amount, in "
                   "fiat_currency when given, else in coin). The coin must be one the merchant accepts."),
    Op("GET", "/dashboard/payment-links", "List payment links, newest first", TAG,
       envelope(obj({"links": {"type": "array", "items": ref("PaymentLink")}})), auth=JWT),
    Op("PATCH", "/dashboard/payment-links/{id}", "Enable or disable a payment link, or change its brand", TAG,
       envelope(ref("PaymentLink")), auth=JWT, body=obj({}, {
           "enabled": BOOLEAN,
           "brand_id": {"anyOf": [{"type": "string", "maxLength": 64}, {"type": "null"}],
                        "description": "A live brand of this account, or null (or \"\") for the default look: the "
                                       "link's pages and the invoices it mints from now on wear it."}}),
       description="Give at least one of enabled and brand_id. A disabled link answers 410 when resolved."),
    Op("GET", "/dashboard/payment-links/{id}/embed", "Donation button markup for a link", TAG,
       envelope(obj({"slug": STRING, "url": STRING, "label": STRING, "snippet": STRING})), auth=JWT,
       query=(Param("label", {"type": "string", "minLength": 1, "maxLength": 80},
                    "Button text; default Donate crypto."),),
       description="snippet is paste-ready HTML: the button element, a no-script link and the donate.js tag."),
    Op("GET", "/l/{slug}", "Resolve a payment link to a fresh invoice", PAGES,
       query=(Param("amount", {"type": "string"}, "Buyer-entered links: the amount; mints and redirects."),
              Param("continue", {"type": "string", "enum": ["1"]},
                    "Set by the preview page and the prompt: mint whatever the User-Agent says.")),
       responses={
           "200": html("Buyer-entered link: the amount prompt (a GET form; works without JavaScript). A link "
                       "preview or prefetch (a bot's User-Agent, Sec-Purpose: prefetch): a page naming the "
                       "link, nothing minted."),
           "302": redirect("To /pay/<track_id> of the newly minted invoice, or of this browser's invoice of the "
                           "link while it is still open."),
           "404": html("Unknown link."),
           "410": html("Disabled link."),
           "429": html("Too many requests, or too many invoices minted from this address; see Retry-After."),
       }, page=True, errors=(410, 503),
       description="Each mint counts one use of the link. Rate limited per IP (60 per minute) and bounded to "
                   "plugin.links.mint_per_minute minted invoices per IP and minute (default 10)."),
    Op("GET", "/assets/donate.js", "The donation button script", PAGES, rate_limited=False,
       responses={"200": {"description": "JavaScript, Cache-Control public, max-age=3600.",
                          "content": {"text/javascript": {"schema": {"type": "string"}}}}},
       description="Mounts a button on every .orbchain-donate element (SPEC 4.14); window.OrbchainDonate "
                   "has mount(el) and mountAll()."),
]


def register(registry) -> None:
    registry.add_schema("PaymentLink", LINK)
    for op in OPERATIONS:
        registry.add(op)
