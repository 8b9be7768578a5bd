"""POST/GET /dashboard/payment-links, PATCH /dashboard/payment-links/{id}, GET .../{id}/embed (SPEC 4.11)."""

from __future__ import annotations

from typing import Any, Mapping

from aiohttp import web

from ...api import (
    AmountError, FIAT_CURRENCIES, Field, InvalidRequest, ValidationError, check_invoice_amount, check_receivable,
    envelope, gateway_of, merchant_record, principal_of, read_json, requires, validate,
)
from ...api.merchant import check_key_brand
from . import store
from .views import DEFAULT_LABEL, MAX_LABEL, embed_snippet, link_view

routes = web.RouteTableDef()

MAX_LINKS = 1000  # per merchant (docs/decisions.md, "Payment links and tips")
MAX_LIFETIME = 43200  # SPEC 8: minutes per minted invoice
LABEL = Field("label", min_len=1, max_len=MAX_LABEL)
BRAND = Field("brand_id", max_len=64)


@routes.post("/dashboard/payment-links")
@requires("jwt")
async def create(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    row = await create_link(gateway, merchant_id, await read_json(request))
    return envelope(link_view(gateway, row))


async def create_link(gateway: Any, merchant_id: str, body: Mapping[str, Any], *, text: bool = False) -> Any:
    """Validate a link's body and store it (the API route's and the dashboard page's one way).

    ``text``: the body is a form's (``lifetime`` is digits), so every field's problem comes back in one error."""
    clean = validate(body, [
        Field("coin", required=True, upper=True, max_len=20), Field("amount", "amount"),
        Field("amount_fiat", "amount"), Field("fiat_currency", upper=True, choices=FIAT_CURRENCIES),
        Field("lifetime", "int", minimum=1, maximum=MAX_LIFETIME), Field("description", max_len=500), BRAND,
    ], text=text)
    if clean["amount"] is not None and clean["amount_fiat"] is not None:
        raise ValidationError({"amount": "give amount or amount_fiat, not both"})
    if clean["amount_fiat"] is not None and not clean["fiat_currency"]:
        raise ValidationError({"fiat_currency": "is required with amount_fiat"})
    if clean["amount"] is not None and clean["fiat_currency"]:
        raise ValidationError({"fiat_currency": "prices a link in fiat; a native amount takes none"})
    if clean["brand_id"]:  # a live brand of this account, as a key's brand (decide_key_brand_allowed)
        await check_key_brand(gateway, merchant_id, clean["brand_id"])
    merchant = await merchant_record(gateway, merchant_id)
    check_receivable(gateway, merchant, clean["coin"])
    units = None
    if clean["amount"] is not None:
        try:
            units = gateway.coins.require(clean["coin"]).to_units(clean["amount"])
        except AmountError as exc:
            raise ValidationError({"amount": str(exc)}) from None
        await check_invoice_amount(gateway, clean["amount"], clean["coin"], [clean["coin"]], field="amount")
    elif clean["amount_fiat"] is not None:  # cents at most, and no less than the coin's smallest payment now
        await check_invoice_amount(gateway, clean["amount_fiat"], clean["fiat_currency"], [clean["coin"]],
                                   field="amount_fiat")
    if await store.count(gateway, merchant_id) >= MAX_LINKS:
        raise InvalidRequest(f"at most {MAX_LINKS} payment links", code="too_many_links")
    amount_fiat = None if clean["amount_fiat"] is None else format(clean["amount_fiat"].normalize(), "f")
    row = await store.insert(gateway, merchant_id, coin=clean["coin"], amount=units, amount_fiat=amount_fiat,
                             fiat_currency=clean["fiat_currency"], lifetime=clean["lifetime"],
                             description=clean["description"] or None, brand_id=clean["brand_id"] or None)
    return row


@routes.get("/dashboard/payment-links")
@requires("jwt")
async def list_links(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    rows = await store.list_for(gateway, principal_of(request).merchant_id)
    return envelope({"links": [link_view(gateway, row) for row in rows]})


@routes.patch("/dashboard/payment-links/{id}")
@requires("jwt")
async def patch(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    row = await store.get(gateway, merchant_id, request.match_info["id"])
    body = await read_json(request)
    clean = validate(body, [Field("enabled", "bool"), BRAND])
    if clean["enabled"] is None and "brand_id" not in body:
        raise ValidationError({"enabled": "is required unless brand_id is given"})
    if "brand_id" in body:  # null or "" clears it (the default look)
        row = await change_brand(gateway, merchant_id, row["id"], clean["brand_id"])
    if clean["enabled"] is not None:
        row = await store.set_enabled(gateway, merchant_id, row["id"], clean["enabled"])
    return envelope(link_view(gateway, row))


async def change_brand(gateway: Any, merchant_id: str, link_id: str, brand_id: str | None) -> Any:
    """Tag the link with a live brand of this account, or clear it (the API's PATCH and the dashboard's one way)."""
    if brand_id:  # a live brand of this account, as a key's brand (decide_key_brand_allowed)
        await check_key_brand(gateway, merchant_id, brand_id)
    return await store.set_brand(gateway, merchant_id, link_id, brand_id or None)


@routes.get("/dashboard/payment-links/{id}/embed")
@requires("jwt")
async def embed(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    row = await store.get(gateway, principal_of(request).merchant_id, request.match_info["id"])
    label = validate(request.query, [LABEL])["label"] or DEFAULT_LABEL
    view = link_view(gateway, row)
    return envelope({"slug": view["slug"], "url": view["url"], "label": label,
                     "snippet": embed_snippet(gateway, view["slug"], label)})
