"""Deleting payments that were never paid, after their retention (issue 29; issue 48 item 3).

Two kinds, each deleted oldest first and a batch (one short statement) at a time:

* Invoices minted for anonymous visitors: a payment link, a tip page or a
  customer's enrolment mints one for whoever asks, a link-preview bot or a
  script included; each one never paid should cost the merchant one row for a
  while, not forever. Their creator passes a retention
  (``services.create_invoice(unpaid_retention_seconds=...)``), stored as
  ``prune_after``. Always on.
* The merchant's own payments, created through the API with a key, once
  ``[payments] unpaid_retention_days`` have passed since their expiry. Off by
  default (config.py says why); a partial index (m0044) finds them.

Either is deleted only while Expired or Cancelled with no deposit at all,
checked again by the DELETE itself: such a payment's state is final (deposits
attach only to Waiting or Paying payments), so nothing can change it while it
is deleted, and no ledger row, refund or payout can name it (each needs a
deposit). Its deposit address stays in ``deposit_addresses``: money sent there
later is still found and credited as an unattributed deposit.

Before each batch is deleted, the ``payments_pruning`` hook lets plugins drop
their own rows naming those payments (a link's invoice list, a Lightning
invoice, a lapsed enrolment). A crash between the two calls the hook again
with the same ids on the next run, so implementations are idempotent.
"""

from __future__ import annotations

import logging
from typing import Awaitable, Callable

from ..infra.batched import in_batches
from ..types.statuses import CANCELLED, EXPIRED
from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

JOB_NAME = "payments.prune_unpaid"
TICK_SECONDS = 3600
BATCH = 500
# Batches per kind and run: a backlog (the first run after opting in) drains over several ticks.
MAX_BATCHES = 200
DAY = 86400
# Deleted only when still unpaid at the moment of deletion: final status, and no deposit at all.
_PRUNABLE = ("status IN (:expired, :cancelled)"
             " AND NOT EXISTS (SELECT 1 FROM deposits d WHERE d.track_id = payments.track_id)")
_STATUSES = {"expired": EXPIRED, "cancelled": CANCELLED}


async def _delete(gateway: "Gateway", track_ids: list[str]) -> int:
    """Tell the plugins, then delete those of ``track_ids`` still prunable; how many were deleted."""
    if not track_ids:
        return 0
    await gateway.hooks.payments_pruning(track_ids=list(track_ids))
    names = {f"t{i}": t for i, t in enumerate(track_ids)}
    deleted = await gateway.db.fetch_all(
        f"DELETE FROM payments WHERE track_id IN ({', '.join(':' + k for k in names)}) AND {_PRUNABLE}"
        " RETURNING track_id", {**_STATUSES, **names})
    return len(deleted)


async def prune_unpaid(gateway: "Gateway", batch: int = BATCH) -> int:
    """Delete up to ``batch`` minted invoices past their ``prune_after``; how many were deleted."""
    rows = await gateway.db.fetch_all(
        f"SELECT track_id FROM payments WHERE prune_after <= :now AND {_PRUNABLE} ORDER BY prune_after, track_id"
        " LIMIT :n", {**_STATUSES, "now": gateway.now(), "n": batch})
    return await _delete(gateway, [r["track_id"] for r in rows])


async def prune_expired(gateway: "Gateway", batch: int = BATCH) -> int:
    """Delete up to ``batch`` of the merchants' own API payments that expired more than
    ``[payments] unpaid_retention_days`` ago, unpaid; how many were deleted (none while the setting is 0).
    Read through the partial index ``payments_unpaid_api`` (m0044), whose predicate this query repeats."""
    days = gateway.config.payments.unpaid_retention_days
    if not days:
        return 0
    rows = await gateway.db.fetch_all(
        f"SELECT track_id FROM payments WHERE key_id IS NOT NULL AND status IN ('{EXPIRED}', '{CANCELLED}')"
        " AND expires_at <= :cut AND NOT EXISTS (SELECT 1 FROM deposits d WHERE d.track_id = payments.track_id)"
        " ORDER BY expires_at LIMIT :n", {"cut": gateway.now() - days * DAY, "n": batch})
    return await _delete(gateway, [r["track_id"] for r in rows])


async def drain(gateway: "Gateway", prune: Callable[["Gateway", int], Awaitable[int]], *, batch: int = BATCH,
                max_batches: int = MAX_BATCHES) -> int:
    """Run ``prune`` batch after batch until a short batch or ``max_batches``; how many were deleted."""
    return await in_batches(lambda n: prune(gateway, n), batch, max_batches)


async def prune_job(gateway: "Gateway") -> None:
    minted, expired = await drain(gateway, prune_unpaid), await drain(gateway, prune_expired)
    if minted or expired:
        log.info("pruned %d unpaid minted invoice(s) and %d expired unpaid payment(s) past their retention",
                 minted, expired)
