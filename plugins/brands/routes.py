"""GET/POST /dashboard/brands and GET/PUT/DELETE /dashboard/brands/{id} (SPEC 4.11)."""

from __future__ import annotations

from typing import Any, Mapping

from aiohttp import web

from ...api import InvalidRequest, ValidationError, envelope, gateway_of, principal_of, read_json, requires
from . import fields, store

routes = web.RouteTableDef()

MAX_LIVE_BRANDS = 100  # per account, archived ones not counted (docs/decisions.md)
_TRUE, _FALSE = ("1", "true", "yes"), ("0", "false", "no", "")


def brand_view(row: Mapping[str, Any]) -> dict[str, Any]:
    """A brand as the API shows it; the webhook secret is never returned, only whether one is set."""
    return {
        "id": row["id"], "name": row["name"], "slug": row["slug"], "logo_url": row["logo_url"],
        "theme_mode": row["theme_mode"], "brand_color": row["brand_color"], "webhook_url": row["webhook_url"],
        "webhook_secret_set": bool(row["webhook_secret"]), "is_default": row["slug"] == store.DEFAULT_SLUG,
        "archived": row["archived_at"] is not None, "archived_at": row["archived_at"],
        "created_at": row["created_at"], "updated_at": row["updated_at"],
    }


def _archived_flag(request: web.Request) -> bool:
    value = request.query.get("archived", "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValidationError({"archived": "must be 1 or 0"})


@routes.get("/dashboard/brands")
@requires("jwt")
async def list_brands(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    archived = _archived_flag(request)
    await store.ensure_default(gateway, merchant_id)
    rows = await store.list_for(gateway, merchant_id, archived=archived)
    return envelope({"brands": [brand_view(row) for row in rows]})


@routes.post("/dashboard/brands")
@requires("jwt")
async def create(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    return envelope(brand_view(await create_brand(gateway, merchant_id, await read_json(request))))


async def create_brand(gateway: Any, merchant_id: str, body: Mapping[str, Any]) -> Any:
    """Validate a brand's body and store it (the API route's and the dashboard page's one way)."""
    clean = await fields.create_body(gateway, body)
    await store.ensure_default(gateway, merchant_id)
    if await store.count_live(gateway, merchant_id) >= MAX_LIVE_BRANDS:
        raise InvalidRequest(f"at most {MAX_LIVE_BRANDS} brands per account", code="too_many_brands")
    slug = clean.pop("slug")
    if slug:
        candidates = [slug]
    else:
        taken = await store.slugs_like(gateway, merchant_id, fields.slug_base(clean["name"]))
        candidates = fields.derived_slugs(clean["name"], taken)
    return await store.insert(gateway, merchant_id, clean, candidates)


@routes.get("/dashboard/brands/{id}")
@requires("jwt")
async def get(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    return envelope(brand_view(await store.get(gateway, merchant_id, request.match_info["id"])))


@routes.put("/dashboard/brands/{id}")
@requires("jwt")
async def update(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    current = await store.get(gateway, merchant_id, request.match_info["id"])
    return envelope(brand_view(await update_brand(gateway, merchant_id, current, await read_json(request))))


async def brand_changes(gateway: Any, current: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """The checked columns ``body`` changes on the brand ``current`` (nothing stored): the API's PUT rules."""
    changes = await fields.update_body(gateway, body)
    if current["slug"] == store.DEFAULT_SLUG and "slug" in changes:
        raise ValidationError({"slug": "the default brand's slug is always default"})
    return changes


async def update_brand(gateway: Any, merchant_id: str, current: Mapping[str, Any], body: Mapping[str, Any]) -> Any:
    """Check ``body`` and store it on the brand ``current`` (the API route's and the dashboard page's one way)."""
    return await store.update(gateway, merchant_id, current["id"], await brand_changes(gateway, current, body))


@routes.delete("/dashboard/brands/{id}")
@requires("jwt")
async def archive(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    return envelope(brand_view(await archive_brand(gateway, merchant_id, request.match_info["id"])))


async def archive_brand(gateway: Any, merchant_id: str, brand_id: str) -> Any:
    current = await store.get(gateway, merchant_id, brand_id)
    if current["slug"] == store.DEFAULT_SLUG:
        raise InvalidRequest("the default brand cannot be archived", code="default_brand")
    return await store.archive(gateway, merchant_id, current["id"])
