"""A payment's row and its deposits, read once in a transaction that changes them, then passed on (issue 44 item 3).

Why: one crediting transaction read the payment row six times and its deposits twice (the lock, the deposit
webhook's destination and order id, the status recompute, the payment webhook, the hook's view). A crediting run
now reads the row once, when it locks it, and the deposits once, when the status is recomputed; what the
transaction then writes to the row is applied to the record as well (``LoadedPayment.changed``), so every later
reader in the transaction sees the row as the database now holds it. The row stays the core's one payment shape
(``PaymentView`` and ``PaymentRecord`` are built from it); this record only keeps it with its deposits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from ..contract.gateway import PluginGateway as Gateway
from .service import payment_deposits


@dataclass(frozen=True)
class LoadedPayment:
    """A payments row and its deposits (oldest first), as they stand in the caller's transaction."""

    row: Mapping[str, Any]
    deposits: tuple[Mapping[str, Any], ...]

    @property
    def track_id(self) -> str:
        return str(self.row["track_id"])

    def changed(self, **columns: Any) -> LoadedPayment:
        """The record after an ``UPDATE payments SET`` of these ``columns`` in this transaction."""
        return replace(self, row={**self.row, **columns})


async def lock_payment(gateway: "Gateway", track_id: str | None) -> Mapping[str, Any] | None:
    """The payment's row, locked for the rest of the transaction; None when there is no payment.

    Lock the deposit's payment before any ledger posting: refunds lock the payment and then the ledger's
    balance rows; taking the same order means a refund racing a credit or a reversal on PostgreSQL waits
    instead of deadlocking.
    """
    if not track_id:
        return None
    db = gateway.db
    return await db.fetch_one(f"SELECT * FROM payments WHERE track_id = :t{db.for_update}", {"t": track_id})


async def with_deposits(gateway: "Gateway", row: Mapping[str, Any]) -> LoadedPayment:
    """The row read in this transaction, with its deposits read now."""
    return LoadedPayment(row, tuple(await payment_deposits(gateway, row["track_id"])))


async def load_payment(gateway: "Gateway", track_id: str) -> LoadedPayment:
    """The row and deposits of a payment the caller just read or wrote (payments are never deleted)."""
    row = await gateway.db.fetch_one("SELECT * FROM payments WHERE track_id = :t", {"t": track_id})
    assert row is not None, f"payment {track_id} exists: payments are never deleted"
    return await with_deposits(gateway, row)
