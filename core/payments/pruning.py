"""Deleting unpaid invoices minted for anonymous visitors, after their retention (issue 29).

A payment link, a tip page or a customer's enrolment mints an invoice for
whoever asks, a link-preview bot or a script included; each one that is
never paid should cost the merchant one row for a while, not forever. Their
creator passes a retention (``services.create_invoice(unpaid_retention_seconds=...)``),
stored as ``prune_after``. This job deletes, oldest first and a batch at a
time, the payments past it that are Expired or Cancelled and never saw a
deposit: such a payment's state is final (deposits attach only to Waiting or
Paying payments), so nothing can change it while it is deleted. Its deposit
address stays in ``deposit_addresses``: money sent there later is still
found and credited as an unattributed deposit.

Before each batch is deleted, the ``payments_pruning`` hook lets plugins drop
their own rows naming those payments (a link's invoice list, a Lightning
invoice, a lapsed enrolment). A crash between the two calls the hook again
with the same ids on the next run, so implementations are idempotent.
"""

from __future__ import annotations

import logging

from ..types.statuses import CANCELLED, EXPIRED
from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

JOB_NAME = "payments.prune_unpaid"
TICK_SECONDS = 3600
BATCH = 500
# Deleted only when still unpaid at the moment of deletion: final status, and no deposit at all.
_PRUNABLE = ("status IN (:expired, :cancelled)"
             " AND NOT EXISTS (SELECT 1 FROM deposits d WHERE d.track_id = payments.track_id)")


async def prune_unpaid(gateway: "Gateway", batch: int = BATCH) -> int:
    """Delete up to ``batch`` prunable payments past their ``prune_after``; how many were deleted."""
    db = gateway.db
    values = {"now": gateway.now(), "expired": EXPIRED, "cancelled": CANCELLED}
    rows = await db.fetch_all(
        f"SELECT track_id FROM payments WHERE prune_after <= :now AND {_PRUNABLE} ORDER BY prune_after, track_id"
        " LIMIT :n", {**values, "n": batch})
    track_ids = [r["track_id"] for r in rows]
    if not track_ids:
        return 0
    await gateway.hooks.payments_pruning(track_ids=list(track_ids))
    names = {f"t{i}": t for i, t in enumerate(track_ids)}
    deleted = await db.fetch_all(
        f"DELETE FROM payments WHERE track_id IN ({', '.join(':' + k for k in names)}) AND {_PRUNABLE}"
        " RETURNING track_id", {**values, **names})
    log.info("pruned %d unpaid invoice(s) past their retention", len(deleted))
    return len(deleted)


async def prune_job(gateway: "Gateway") -> None:
    await prune_unpaid(gateway)
