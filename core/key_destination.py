"""Where the webhooks a request caused go: SPEC 5.2 and 6.1's per-key override.

A scoped key may carry its own ``webhook_url`` (and ``webhook_secret``); every
event its requests cause goes there: the transfer it sent, and the
``payment.*`` and ``deposit.*`` events of a payment it created (payments keep
``key_id``). One module so transfers, payment status and deposits pick the
destination by the same rule (docs/decisions.md, "Webhook destinations"):
a payment's ``callback_url`` first (the most specific), then the key's URL
with the key's secret (else the account's secret), then the account's URL.
"""

from __future__ import annotations

from typing import Any, Mapping

from .db import Database


async def key_destination(db: Database, merchant_id: str, key_id: str | None) -> tuple[str | None, str | None]:
    """A live key's own webhook URL and secret, or (None, None) for the account's.

    A revoked key's settings no longer speak for the merchant: its events fall back to the account.
    """
    if not key_id:
        return None, None
    key = await db.fetch_one(
        "SELECT webhook_url, webhook_secret FROM api_keys WHERE id = :id AND merchant_id = :m AND revoked_at IS NULL",
        {"id": key_id, "m": merchant_id},
    )
    if key is None or not key["webhook_url"]:
        return None, None
    return key["webhook_url"], key["webhook_secret"] or None


async def payment_destination(db: Database, payment: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """URL and secret for an event of ``payment`` (a payments row); None means the account's."""
    if payment["callback_url"]:
        return payment["callback_url"], None
    return await key_destination(db, payment["merchant_id"], payment["key_id"])


async def payment_destination_of(db: Database, track_id: str | None) -> tuple[str | None, str | None]:
    """:func:`payment_destination` for the payment a deposit is tied to (none: the account's)."""
    if not track_id:
        return None, None
    payment = await db.fetch_one("SELECT merchant_id, callback_url, key_id FROM payments WHERE track_id = :t",
                                 {"t": track_id})
    if payment is None:
        return None, None
    return await payment_destination(db, payment)
