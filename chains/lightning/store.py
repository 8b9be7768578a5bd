"""The plugin's rows: invoices issued for payments, and the settlement cursor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from ...api import delete_rows_naming
from .backend import OPEN

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

CURSOR = "settle_index"


@dataclass(frozen=True)
class IssuedInvoice:
    payment_hash: str
    track_id: str
    merchant_id: str
    bolt11: str
    amount_msat: int
    expires_at: int
    state: str
    settled_at: int | None


def _issued(gateway: "Gateway", row: Mapping[str, Any]) -> IssuedInvoice:
    return IssuedInvoice(row["payment_hash"], row["track_id"], row["merchant_id"], row["bolt11"],
                         gateway.db.to_int(row["amount_msat"]), int(row["expires_at"]), row["state"],
                         None if row["settled_at"] is None else int(row["settled_at"]))


async def add_invoice(gateway: "Gateway", invoice: IssuedInvoice) -> None:
    db = gateway.db
    await db.execute(
        "INSERT INTO lightning_invoices (payment_hash, track_id, merchant_id, bolt11, amount_msat, expires_at,"
        " state, created_at) VALUES (:h, :t, :m, :b, :a, :e, :s, :now)",
        {"h": invoice.payment_hash, "t": invoice.track_id, "m": invoice.merchant_id, "b": invoice.bolt11,
         "a": db.amount_param(invoice.amount_msat), "e": invoice.expires_at, "s": OPEN, "now": gateway.now()})


async def invoice_by_hash(gateway: "Gateway", payment_hash: str) -> IssuedInvoice | None:
    row = await gateway.db.fetch_one("SELECT * FROM lightning_invoices WHERE payment_hash = :h", {"h": payment_hash})
    return None if row is None else _issued(gateway, row)


async def open_invoices(gateway: "Gateway", not_expired_before: int, limit: int = 200) -> list[IssuedInvoice]:
    rows = await gateway.db.fetch_all(
        "SELECT * FROM lightning_invoices WHERE state = :s AND expires_at >= :t ORDER BY expires_at LIMIT :n",
        {"s": OPEN, "t": not_expired_before, "n": limit})
    return [_issued(gateway, r) for r in rows]


async def close_expired(gateway: "Gateway", before: int) -> None:
    """Invoices past expiry (and the poll's grace) are no longer polled: the node refuses to settle them."""
    await gateway.db.execute("UPDATE lightning_invoices SET state = 'EXPIRED' WHERE state = :s AND expires_at < :t",
                             {"s": OPEN, "t": before})


async def mark_state(gateway: "Gateway", payment_hash: str, state: str, *, settle_index: int | None = None,
                     settled_at: int | None = None, amount_paid_msat: int | None = None) -> None:
    db = gateway.db
    await db.execute(
        "UPDATE lightning_invoices SET state = :s, settle_index = :i, settled_at = :at, amount_paid_msat = :p"
        " WHERE payment_hash = :h",
        {"s": state, "i": settle_index, "at": settled_at,
         "p": None if amount_paid_msat is None else db.amount_param(amount_paid_msat), "h": payment_hash})


async def cursor(gateway: "Gateway") -> int:
    value = await gateway.db.fetch_val("SELECT settle_index FROM lightning_cursor WHERE name = :n", {"n": CURSOR})
    return int(value or 0)


async def advance_cursor(gateway: "Gateway", settle_index: int) -> None:
    """Remember the highest settle index processed (never moves back)."""
    db = gateway.db
    await db.execute("INSERT INTO lightning_cursor (name, settle_index) VALUES (:n, 0) ON CONFLICT (name) DO NOTHING",
                     {"n": CURSOR})
    await db.execute("UPDATE lightning_cursor SET settle_index = :i WHERE name = :n AND settle_index < :i",
                     {"n": CURSOR, "i": settle_index})


async def invoice_for_payment(gateway: "Gateway", track_id: str) -> IssuedInvoice | None:
    """The newest invoice issued for a payment (a payment has one; a coin switch on the page may add another)."""
    row = await gateway.db.fetch_one(
        "SELECT * FROM lightning_invoices WHERE track_id = :t ORDER BY created_at DESC, payment_hash LIMIT 1",
        {"t": track_id})
    return None if row is None else _issued(gateway, row)


async def forget_invoices(gateway: "Gateway", track_ids: list[str]) -> None:
    """Drop the invoices issued for these payments (the core is pruning them unpaid); idempotent."""
    await delete_rows_naming(gateway, "lightning_invoices", "track_id", track_ids)


async def claim_payment_hash(db: Any, payment_hash: str, payout_id: str, now: int) -> str:
    """Claim ``payment_hash`` for ``payout_id`` unless another payout holds it; returns the holder."""
    await db.execute("INSERT INTO lightning_payout_claims (payment_hash, payout_id, created_at) VALUES (:h, :p, :now)"
                     " ON CONFLICT (payment_hash) DO NOTHING", {"h": payment_hash, "p": payout_id, "now": now})
    return str(await db.fetch_val("SELECT payout_id FROM lightning_payout_claims WHERE payment_hash = :h",
                                  {"h": payment_hash}))


async def release_payment_hash(db: Any, payment_hash: str, payout_id: str | None) -> None:
    """The node says ``payout_id``'s payment failed: the invoice may be tried again by another payout.

    Only the holder's claim goes: a payout asked again about its failed payment must not drop the
    claim another payout has taken since. ``payout_id`` None (a payout signed before claims were
    recorded in its raw) releases whoever holds the hash.
    """
    holder = "" if payout_id is None else " AND payout_id = :p"
    await db.execute(f"DELETE FROM lightning_payout_claims WHERE payment_hash = :h{holder}",
                     {"h": payment_hash, **({} if payout_id is None else {"p": payout_id})})
