"""The ``payment_links`` and ``payment_link_invoices`` tables.

Dashboard reads and writes name the merchant, so another merchant's link is
simply not found (404). The public side finds a link by its slug only.
"""

from __future__ import annotations

import secrets
import time
from typing import TYPE_CHECKING, Any, Mapping

from ...api import (
    Gone, delete_rows_naming, insert_statement, merchant_row, merchant_row_count, merchant_rows, update_row,
)

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

Row = Mapping[str, Any]
# Lower-case letters and digits without the look-alikes (0/o, 1/l/i): 31 symbols, 12 of them ~59 bits.
SLUG_ALPHABET = "23456789abcdefghjkmnpqrstuvwxyz"
SLUG_LENGTH = 12  # SPEC 2.16


def new_slug() -> str:
    return "".join(secrets.choice(SLUG_ALPHABET) for _ in range(SLUG_LENGTH))


def is_slug(text: str) -> bool:
    return len(text) == SLUG_LENGTH and all(c in SLUG_ALPHABET for c in text)


async def count(gateway: "Gateway", merchant_id: str) -> int:
    return await merchant_row_count(gateway, "payment_links", merchant_id)


async def insert(gateway: "Gateway", merchant_id: str, *, coin: str, amount: int | None, amount_fiat: str | None,
                 fiat_currency: str | None, lifetime: int | None, description: str | None,
                 brand_id: str | None = None) -> Row:
    now = gateway.now()
    # The id leads with the creation time in nanoseconds, so "newest first" holds within one second too.
    link_id = f"lnk_{time.time_ns():016x}{secrets.token_hex(4)}"
    row = {"id": link_id, "merchant_id": merchant_id,
           "slug": new_slug(), "coin": coin,
           "amount": None if amount is None else gateway.db.amount_param(amount), "amount_fiat": amount_fiat,
           "fiat_currency": fiat_currency, "lifetime_minutes": lifetime, "description": description,
           "brand_id": brand_id, "enabled": True, "uses": 0, "created_at": now, "updated_at": now}
    # 31**12 slugs: a collision is astronomically rare, and the UNIQUE constraint would refuse it loudly.
    await gateway.db.execute(insert_statement("payment_links", row), row)
    return await get(gateway, merchant_id, link_id)


async def get(gateway: "Gateway", merchant_id: str, link_id: str) -> Row:
    return await merchant_row(gateway, "payment_links", merchant_id, link_id)


async def by_slug(gateway: "Gateway", slug: str) -> Row | None:
    if not is_slug(slug):
        return None
    return await gateway.db.fetch_one("SELECT * FROM payment_links WHERE slug = :s", {"s": slug})


async def list_for(gateway: "Gateway", merchant_id: str) -> list[Row]:
    return await merchant_rows(gateway, "payment_links", merchant_id)


async def set_enabled(gateway: "Gateway", merchant_id: str, link_id: str, enabled: bool) -> Row:
    await get(gateway, merchant_id, link_id)
    await update_row(gateway, "payment_links", link_id, {"enabled": enabled, "updated_at": gateway.now()},
                     merchant_id=merchant_id)
    return await get(gateway, merchant_id, link_id)


async def set_brand(gateway: "Gateway", merchant_id: str, link_id: str, brand_id: str | None) -> Row:
    """The brand the link's pages and the invoices it mints from now on wear (None: the default look)."""
    await get(gateway, merchant_id, link_id)
    await update_row(gateway, "payment_links", link_id, {"brand_id": brand_id, "updated_at": gateway.now()},
                     merchant_id=merchant_id)
    return await get(gateway, merchant_id, link_id)


async def count_use(gateway: "Gateway", link_id: str, track_id: str) -> None:
    """Count one minted invoice; runs inside the transaction that stores the invoice.

    The increment is one atomic UPDATE (no read-modify-write), so concurrent
    mints on either database never lose a count. A link disabled since it
    was read refuses (410) and the invoice rolls back with the count.
    """
    counted = await gateway.db.fetch_val(
        "UPDATE payment_links SET uses = uses + 1 WHERE id = :i AND enabled = :on RETURNING uses",
        {"i": link_id, "on": True})
    if counted is None:
        raise Gone("this payment link is disabled", code="link_disabled")
    await gateway.db.execute("INSERT INTO payment_link_invoices (track_id, link_id, created_at) VALUES (:t, :l, :c)",
                             {"t": track_id, "l": link_id, "c": gateway.now()})


async def invoices_of(gateway: "Gateway", link_id: str) -> list[str]:
    """Track ids of the invoices a link minted, by minute of creation (ties in any order)."""
    rows = await gateway.db.fetch_all(
        "SELECT track_id FROM payment_link_invoices WHERE link_id = :l ORDER BY created_at, track_id", {"l": link_id})
    return [r["track_id"] for r in rows]


async def minted_by(gateway: "Gateway", link_id: str, track_id: str) -> bool:
    """Whether ``track_id`` is an invoice this link minted (a visitor's cookie is checked against it)."""
    return await gateway.db.fetch_val(
        "SELECT 1 FROM payment_link_invoices WHERE track_id = :t AND link_id = :l", {"t": track_id, "l": link_id}
    ) is not None


async def forget_invoices(gateway: "Gateway", track_ids: list[str]) -> None:
    """The ``payments_pruning`` hook: these unpaid invoices are being deleted; their rows go too (``uses`` stays)."""
    await delete_rows_naming(gateway, "payment_link_invoices", "track_id", track_ids)
