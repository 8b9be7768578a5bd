"""Exact payment totals without counting a merchant's payments (issue 48 item 1).

The SPEC's lists answer an exact integer ``total``. Database triggers (m0048)
append a delta row for every payment inserted, deleted or moved between
(merchant, status, type, currency); this module reads them and folds them:

* :func:`total` is a merchant's count for any combination of status, type
  and currency: the folded counts plus the deltas not folded yet, summed in
  **one statement** (one snapshot, so a fold committing meanwhile is seen
  entirely or not at all). It reads a few dozen rows however many payments
  the merchant has. A filter on ``order_id`` is not counted here: the lists
  count those with ``COUNT(*)`` over the ``(merchant_id, order_id)`` index,
  a handful of rows.
* :func:`fold` moves a batch of deltas into ``payment_counts``. On PostgreSQL
  one statement deletes the batch and adds it up (``DELETE ... RETURNING`` in
  a ``WITH``), its rows claimed ``FOR UPDATE SKIP LOCKED`` so two folds never
  wait on each other nor take a delta twice; deltas of transactions not yet
  committed are invisible and wait for the next fold. SQLite has one writer,
  so a transaction reading then deleting up to an id is enough.
* :func:`mismatches` compares the counts with ``COUNT(*)``, one statement;
  ``orbchain doctor`` reports it. :func:`rebuild` recounts from scratch, for
  rows loaded with triggers off (``session_replication_role = replica``).
"""

from __future__ import annotations

import logging
from typing import Any

from ..contract.gateway import PluginGateway as Gateway
from ..infra.batched import in_batches
from ..infra.db import Database

log = logging.getLogger(__name__)

JOB_NAME = "payments.fold_counts"
TICK_SECONDS = 5
BATCH = 10_000
# Batches per run: a backlog (after a bulk change, or a pause of the job) drains over a few ticks.
MAX_BATCHES = 50
COUNTED = ("status", "type", "currency")
_KEY = "merchant_id, status, type, currency"


def _where(merchant_id: str, filters: dict[str, str | None]) -> tuple[str, dict[str, Any]]:
    unknown = set(filters) - set(COUNTED)
    if unknown:
        raise ValueError(f"payment counts are kept by status, type and currency, not {sorted(unknown)}")
    clauses, values = ["merchant_id = :m"], {"m": merchant_id}
    for column, value in filters.items():
        if value is not None:
            clauses.append(f"{column} = :{column}")
            values[column] = value
    return " AND ".join(clauses), values


async def total(db: Database, merchant_id: str, **filters: str | None) -> int:
    """How many payments ``merchant_id`` has with the given ``status``, ``type`` and ``currency``
    (None: any); exact, and read from the counts, never from ``payments``."""
    where, values = _where(merchant_id, filters)
    counted = await db.fetch_val(
        f"SELECT COALESCE((SELECT SUM(n) FROM payment_counts WHERE {where}), 0)"
        f" + COALESCE((SELECT SUM(delta) FROM payment_count_deltas WHERE {where}), 0)", values)
    return int(counted)


_PG_FOLD = f"""
WITH batch AS (SELECT id FROM payment_count_deltas ORDER BY id LIMIT :n FOR UPDATE SKIP LOCKED),
moved AS (DELETE FROM payment_count_deltas d USING batch WHERE d.id = batch.id
          RETURNING d.merchant_id, d.status, d.type, d.currency, d.delta),
summed AS (SELECT {_KEY}, SUM(delta) AS n, COUNT(*) AS rows FROM moved GROUP BY {_KEY}),
added AS (INSERT INTO payment_counts ({_KEY}, n)
          SELECT {_KEY}, n FROM summed ORDER BY {_KEY}
          ON CONFLICT ({_KEY}) DO UPDATE SET n = payment_counts.n + EXCLUDED.n)
SELECT COALESCE(SUM(rows), 0) FROM summed"""


async def fold(db: Database, batch: int = BATCH) -> int:
    """Fold up to ``batch`` deltas into ``payment_counts``; how many were folded."""
    if db.is_postgres:
        async with db.transaction():  # a write: never a read a pool might route elsewhere
            return int(await db.fetch_val(_PG_FOLD, {"n": batch}))
    async with db.transaction():
        upto = await db.fetch_val(
            "SELECT MAX(id) FROM (SELECT id FROM payment_count_deltas ORDER BY id LIMIT :n)", {"n": batch})
        if upto is None:
            return 0
        # WHERE before GROUP BY: SQLite's parser needs it to read the ON CONFLICT that follows a SELECT.
        await db.execute(
            f"INSERT INTO payment_counts ({_KEY}, n) SELECT {_KEY}, SUM(delta) FROM payment_count_deltas"
            f" WHERE id <= :upto GROUP BY {_KEY} ON CONFLICT ({_KEY}) DO UPDATE SET n = n + excluded.n",
            {"upto": upto})
        folded = await db.fetch_all("DELETE FROM payment_count_deltas WHERE id <= :upto RETURNING id",
                                    {"upto": upto})
        return len(folded)


async def fold_all(db: Database, *, batch: int = BATCH, max_batches: int = MAX_BATCHES) -> int:
    """Fold batch after batch until a short one or ``max_batches``; how many deltas were folded."""
    return await in_batches(lambda n: fold(db, n), batch, max_batches)


async def fold_job(gateway: "Gateway") -> None:
    """The ``payments.fold_counts`` job: keeps the deltas a total reads to a few seconds' worth."""
    await fold_all(gateway.db)


async def mismatches(db: Database) -> list[dict[str, Any]]:
    """Every (merchant, status, type, currency) whose kept count differs from ``COUNT(*)`` of payments,
    with the difference (kept minus actual); empty when they agree. One statement: one snapshot, so
    payments created meanwhile cannot show as a false mismatch. Reads every payment: an operator's check."""
    rows = await db.fetch_all(
        f"SELECT {_KEY}, SUM(n) AS difference FROM ("
        f" SELECT {_KEY}, n FROM payment_counts"
        f" UNION ALL SELECT {_KEY}, delta FROM payment_count_deltas"
        f" UNION ALL SELECT {_KEY}, -COUNT(*) FROM payments GROUP BY {_KEY}"
        f") AS kept GROUP BY {_KEY} HAVING SUM(n) <> 0 ORDER BY {_KEY}")
    return [{**row, "difference": int(row["difference"])} for row in rows]


async def rebuild(db: Database) -> None:
    """Recount from ``payments``, for rows written with the triggers off (a bulk load, a restore). On
    PostgreSQL writers of payments wait meanwhile (``SHARE`` lock), so no change falls between the recount
    and the deletes; SQLite's single writer holds its lock anyway."""
    async with db.transaction():
        if db.is_postgres:
            await db.execute("LOCK TABLE payments IN SHARE MODE")
        await db.execute("DELETE FROM payment_count_deltas")
        await db.execute("DELETE FROM payment_counts")
        await db.execute(f"INSERT INTO payment_counts ({_KEY}, n) SELECT {_KEY}, COUNT(*) FROM payments"
                         f" GROUP BY {_KEY}")
