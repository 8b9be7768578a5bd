"""Exact payment totals without counting a merchant's payments (issue 48 item 1).

The SPEC's lists answer an exact integer ``total``. The payments list is one
of the lists whose counts the database keeps (core/infra/kept_counts.py:
triggers append a delta for every payment inserted, deleted or moved between
status, type and currency; m0048, general since m0057). :func:`total` reads a
merchant's count for any combination of those three, a few dozen rows however
many payments the merchant has. A filter on ``order_id`` is not counted here:
the list counts those with ``COUNT(*)`` over the ``(merchant_id, order_id)``
index, a handful of rows.

The ``payments.fold_counts`` job (its name kept from when it folded only
payments) folds the deltas of **every** kept list: payments, deposits, the
webhook delivery log and any plugin's (the activity log).
"""

from __future__ import annotations

from ..contract.gateway import PluginGateway as Gateway
from ..infra import kept_counts
from ..infra.db import Database

JOB_NAME = "payments.fold_counts"
TICK_SECONDS = 5
BATCH = 10_000
# Batches per run: a backlog (after a bulk change, or a pause of the job) drains over a few ticks.
MAX_BATCHES = 50
PAYMENTS = kept_counts.KeptList("payments", ("status", "type", "currency"))
COUNTED = PAYMENTS.keys
mismatches = kept_counts.mismatches
rebuild = kept_counts.rebuild
fold = kept_counts.fold


async def total(db: Database, merchant_id: str, **filters: str | None) -> int:
    """How many payments ``merchant_id`` has with the given ``status``, ``type`` and ``currency``
    (None: any); exact, and read from the counts, never from ``payments``."""
    return await PAYMENTS.total(db, merchant_id, **filters)


async def fold_all(db: Database, *, batch: int = BATCH, max_batches: int = MAX_BATCHES) -> int:
    """Fold batch after batch (deltas of every kept list) until a short one or ``max_batches``."""
    return await kept_counts.fold_all(db, batch=batch, max_batches=max_batches)


async def fold_job(gateway: "Gateway") -> None:
    """The ``payments.fold_counts`` job: keeps the deltas a total reads to a few seconds' worth."""
    await fold_all(gateway.db)
