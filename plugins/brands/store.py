"""The ``brands`` table: the default brand, create, read, change, archive.

Every read and write names the merchant, so another merchant's brand is
simply not found (404). Slugs are unique per account (index
``brands_merchant_slug``); a clash is detected by the database, never by a
read-then-write that two requests could both pass.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ...api import Conflict, cache_changed, insert_statement, is_unique_violation, merchant_row, update_row

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

Row = Mapping[str, Any]
DEFAULT_SLUG = "default"
DEFAULT_NAME = "Default"
# Appearance and webhook settings: a brand's own value, else the default brand's (docs/decisions.md).
SETTINGS = ("logo_url", "theme_mode", "brand_color", "webhook_url", "webhook_secret")


def new_id() -> str:
    return "brd_" + secrets.token_hex(10)


async def _insert(gateway: "Gateway", merchant_id: str, fields: Mapping[str, Any]) -> str | None:
    """Insert one brand; its id, or None when the slug is already taken in this account."""
    now = gateway.now()
    row = {"id": new_id(), "merchant_id": merchant_id, **fields, "created_at": now, "updated_at": now}
    inserted = await gateway.db.fetch_val(
        insert_statement("brands", row) + " ON CONFLICT (merchant_id, slug) DO NOTHING RETURNING id", row)
    cache_changed(gateway)  # branding.py caches page looks; a new default brand may change them
    return inserted


async def ensure_default(gateway: "Gateway", merchant_id: str) -> None:
    """Create the account's default brand the first time anything asks (idempotent, race-safe)."""
    exists = await gateway.db.fetch_val("SELECT 1 FROM brands WHERE merchant_id = :m AND slug = :s",
                                        {"m": merchant_id, "s": DEFAULT_SLUG})
    if not exists:
        # Two first requests at once: the unique index lets exactly one insert.
        await _insert(gateway, merchant_id, {"name": DEFAULT_NAME, "slug": DEFAULT_SLUG})


async def insert(gateway: "Gateway", merchant_id: str, fields: Mapping[str, Any],
                 candidates: Sequence[str]) -> Row:
    """Insert with the first free slug of ``candidates``; 409 ``slug_taken`` when none is free."""
    for slug in candidates:
        brand_id = await _insert(gateway, merchant_id, {**fields, "slug": slug})
        if brand_id is not None:
            return await get(gateway, merchant_id, brand_id)
    raise Conflict("slug already used by another brand of this account", code="slug_taken")


async def slugs_like(gateway: "Gateway", merchant_id: str, base: str) -> set[str]:
    """Slugs of this account equal to ``base`` or starting with ``base-`` (to derive a free one)."""
    rows = await gateway.db.fetch_all(
        "SELECT slug FROM brands WHERE merchant_id = :m AND (slug = :b OR substr(slug, 1, :n) = :p)",
        {"m": merchant_id, "b": base, "p": base + "-", "n": len(base) + 1})
    return {row["slug"] for row in rows}


async def count_live(gateway: "Gateway", merchant_id: str) -> int:
    return int(await gateway.db.fetch_val(
        "SELECT COUNT(*) FROM brands WHERE merchant_id = :m AND archived_at IS NULL", {"m": merchant_id}))


async def get(gateway: "Gateway", merchant_id: str, brand_id: str) -> Row:
    return await merchant_row(gateway, "brands", merchant_id, brand_id)


async def list_for(gateway: "Gateway", merchant_id: str, *, archived: bool) -> list[Row]:
    """The default brand first, then the others oldest first."""
    where = "" if archived else " AND archived_at IS NULL"
    return await gateway.db.fetch_all(
        f"SELECT * FROM brands WHERE merchant_id = :m{where}"
        " ORDER BY CASE WHEN slug = :d THEN 0 ELSE 1 END, created_at, id",
        {"m": merchant_id, "d": DEFAULT_SLUG})


async def update(gateway: "Gateway", merchant_id: str, brand_id: str, changes: Mapping[str, Any]) -> Row:
    """Apply ``changes`` (column -> value, None clears); 409 ``slug_taken`` on a slug clash."""
    await get(gateway, merchant_id, brand_id)
    if changes:
        values = {**changes, "updated_at": gateway.now()}
        try:
            async with gateway.db.transaction():
                await update_row(gateway, "brands", brand_id, values, merchant_id=merchant_id)
        except Exception as exc:
            if is_unique_violation(exc):
                raise Conflict("slug already used by another brand of this account", code="slug_taken") from None
            raise
        cache_changed(gateway)
    return await get(gateway, merchant_id, brand_id)


async def archive(gateway: "Gateway", merchant_id: str, brand_id: str) -> Row:
    """Archive once; archiving again keeps the first time."""
    now = gateway.now()
    await gateway.db.execute(
        "UPDATE brands SET archived_at = :now, updated_at = :now"
        " WHERE id = :id AND merchant_id = :m AND archived_at IS NULL",
        {"now": now, "id": brand_id, "m": merchant_id})
    cache_changed(gateway)
    return await get(gateway, merchant_id, brand_id)


async def live_brand_exists(gateway: "Gateway", merchant_id: str, brand_id: str) -> bool:
    return bool(await gateway.db.fetch_val(
        "SELECT 1 FROM brands WHERE id = :i AND merchant_id = :m AND archived_at IS NULL",
        {"i": brand_id, "m": merchant_id}))


async def brand_and_default(gateway: "Gateway", merchant_id: str,
                            brand_id: str | None) -> tuple[Row | None, Row | None]:
    """A payment's brand and the account's default brand, in one query (either may be missing)."""
    rows = await gateway.db.fetch_all(
        "SELECT * FROM brands WHERE merchant_id = :m AND (slug = :d OR id = :i)",
        {"m": merchant_id, "d": DEFAULT_SLUG, "i": brand_id or ""})
    brand = next((r for r in rows if brand_id and r["id"] == brand_id), None)
    default = next((r for r in rows if r["slug"] == DEFAULT_SLUG), None)
    return brand, default


def effective(brand: Row | None, default: Row | None, field: str) -> Any:
    """A setting as it applies: the brand's own, else the default brand's, else None (the account's)."""
    for row in (brand, default):
        if row is not None and row[field]:
            return row[field]
    return None
