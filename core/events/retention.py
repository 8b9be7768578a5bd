"""Bounded growth of the webhook history: delivery attempts and finished outbox rows past their retention.

Every event leaves an outbox row and at least one delivery attempt, forever
until now: at a million payments that is millions of rows no one reads after
a few weeks. This job deletes, oldest first and a small batch per statement
(short locks, no long transaction; creates carry on beside it), delivery
attempts older than ``webhooks.retention_days``, then outbox rows older than
it that are finished (not pending) and have no attempt left. A pending row
is never touched, and the status is checked again in the DELETE itself, so
an event requeued meanwhile (``orbchain webhooks redeliver``) stays.

Why a retention of at least a week (config.py): an outbox row is what makes
a re-announced event (the same logical key) a no-op; the state changes that
announce events are final long before a week, so a pruned row is not needed
for that any more. Money, payments with deposits, payouts and the activity
log are never pruned here (docs/operations.md says how to archive them).
"""

from __future__ import annotations

import logging
from functools import partial

from .outbox import PENDING
from ..infra.batched import in_batches
from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

JOB_NAME = "webhooks.prune_history"
TICK_SECONDS = 3600
BATCH = 500
# Batches per run: a backlog (the first run after an upgrade) drains over several ticks, not in one long run.
MAX_BATCHES = 200
DAY = 86400

_FINISHED_EVENT = ("status <> :pending AND NOT EXISTS"
                   " (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = webhook_events.event_id)")


async def prune_deliveries(gateway: "Gateway", cut: int, batch: int = BATCH) -> int:
    """Delete up to ``batch`` delivery attempts made before ``cut``, oldest first; how many were deleted."""
    deleted = await gateway.db.fetch_all(
        "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE created_at < :cut"
        " ORDER BY created_at, id LIMIT :n) RETURNING id", {"cut": cut, "n": batch})
    return len(deleted)


async def prune_events(gateway: "Gateway", cut: int, batch: int = BATCH) -> int:
    """Delete up to ``batch`` finished outbox rows created before ``cut`` with no attempt left (the status
    is checked again by the DELETE itself: a row requeued meanwhile stays)."""
    deleted = await gateway.db.fetch_all(
        "DELETE FROM webhook_events WHERE event_id IN (SELECT event_id FROM webhook_events"
        f" WHERE created_at < :cut AND {_FINISHED_EVENT} ORDER BY created_at, event_id LIMIT :n)"
        f" AND {_FINISHED_EVENT} RETURNING event_id", {"cut": cut, "pending": PENDING, "n": batch})
    return len(deleted)


async def prune_history(gateway: "Gateway", *, batch: int = BATCH, max_batches: int = MAX_BATCHES) -> int:
    """One run: attempts first (an outbox row goes only once its attempts are gone), then outbox rows."""
    days = gateway.config.webhooks.retention_days
    if not days:
        return 0
    cut = gateway.now() - days * DAY
    total = 0
    for prune in (prune_deliveries, prune_events):
        total += await in_batches(partial(prune, gateway, cut), batch, max_batches)
    if total:
        log.info("pruned %d webhook history row(s) older than %d days", total, days)
    return total


async def prune_job(gateway: "Gateway") -> None:
    await prune_history(gateway)
