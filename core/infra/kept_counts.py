"""Exact list totals the database keeps, for every list that answers one (issue 48 item 1).

The SPEC's lists answer ``limit``/``offset`` and an exact integer ``total``.
``COUNT(*)`` over a merchant's rows reads every one of them (the webhook log
took 95.7 ms at 1,000,000 rows). A migration names a list once
(:meth:`KeptList.counted`): its source table, the column naming the merchant
(``merchant_id`` unless told: a transfer is counted for its sender and for its
recipient, m0059) and up to three columns it is filtered by. Database
triggers, on both PostgreSQL and SQLite, then append a delta row
(+1, -1) to ``kept_count_deltas`` for every row inserted, deleted, or moved
between (merchant, keys), in the very transaction that does it: no code path
(a plugin, a job, psql) can miss one, and an appended row locks nothing
another writer waits for (a counter row per merchant would queue its
concurrent creates).

* :meth:`KeptList.total` sums the folded ``kept_counts`` and the unfolded deltas in
  **one statement** (one snapshot: a fold committing meanwhile is seen whole
  or not at all); it reads a few dozen rows however large the list.
* :func:`fold` moves a batch of deltas, of every list, into ``kept_counts``
  (the ``payments.fold_counts`` job). PostgreSQL: one statement claims the
  batch ``FOR UPDATE SKIP LOCKED``, deletes and adds it up, so two folds never
  wait on each other nor take a delta twice. SQLite (one writer): sum up to an
  id, then delete up to it, in one transaction.
* :func:`mismatches` compares every list with ``COUNT(*)`` of its source in one
  statement (``orbchain doctor``); :func:`rebuild` recounts, for rows written
  with the triggers off (``session_replication_role = replica``: a restore
  with ``--disable-triggers``, the history bench's fill).

The lists themselves are rows of ``counted_lists`` (written by the migration
that installs the triggers), so a plugin's list (the activity log) is folded,
checked and recounted with the core's, without registering anything at
start-up. Keys are stored as text, NULL as ``''``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from .batched import in_batches
from .db import Database

SLOTS = ("k1", "k2", "k3")
_KEY = "list, merchant_id, k1, k2, k3"
_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


@dataclass(frozen=True)
class KeptList:
    """A list whose total is kept: its name in ``counted_lists`` and its counted filters, in slot order."""

    name: str
    keys: tuple[str, ...] = ()

    def where(self, merchant_id: str, filters: dict[str, str | None],
              tag: str = "") -> tuple[str, dict[str, Any]]:
        """The WHERE clause over ``kept_counts`` (and the deltas) for the merchant and the filters given; its
        parameters' names end in ``tag`` (two lists' clauses in one statement)."""
        unknown = set(filters) - set(self.keys)
        if unknown:
            raise ValueError(f"{self.name} counts are kept by {list(self.keys)}, not {sorted(unknown)}")
        clauses = [f"list = :list{tag}", f"merchant_id = :m{tag}"]
        values: dict[str, Any] = {f"list{tag}": self.name, f"m{tag}": merchant_id}
        for slot, key in zip(SLOTS, self.keys):
            value = filters.get(key)
            if value is not None:
                clauses.append(f"{slot} = :{slot}{tag}")
                values[slot + tag] = value
        return " AND ".join(clauses), values

    def summed(self, merchant_id: str, filters: dict[str, str | None],
               tag: str = "") -> tuple[str, dict[str, Any]]:
        """The total as an SQL expression and its parameters, for a statement that adds or subtracts other
        terms in the same snapshot (the transfers list: sent plus received; subscriptions: less enrolments)."""
        where, values = self.where(merchant_id, filters, tag)
        return (f"(COALESCE((SELECT SUM(n) FROM kept_counts WHERE {where}), 0)"
                f" + COALESCE((SELECT SUM(delta) FROM kept_count_deltas WHERE {where}), 0))", values)

    async def total(self, db: Database, merchant_id: str, **filters: str | None) -> int:
        """How many of the list's rows the merchant has with the given filters (None: any); exact, read from
        the counts and the unfolded deltas in one statement, never from the list's own table."""
        summed, values = self.summed(merchant_id, filters)
        return int(await db.fetch_val(f"SELECT {summed}", values))

    def counted(self, source: str, dialect: str, merchant: str = "merchant_id") -> list[str]:
        """A migration's statements that make ``source``'s rows per merchant (its column ``merchant``) and
        the keys (columns of ``source``) this kept list: its ``counted_lists`` row, its counts as of now, the
        triggers that keep them. Plugins call it from their own migrations (the activity log's m0003). A
        table counted for two lists names a different merchant column in each (transfers: sender, recipient)."""
        return _counted_list(self.name, source, self.keys, dialect, merchant)


def _checked(*names: str) -> None:
    for name in names:
        if not _NAME.match(name):
            raise ValueError(f"not a plain SQL name: {name!r}")


def _slots(row: str, keys: Sequence[str]) -> str:
    """``row``'s key columns as the three slots' values (NULL and unused slots: '')."""
    values = [f"COALESCE({row}{key}, '')" for key in keys] + ["''"] * (len(SLOTS) - len(keys))
    return ", ".join(values)


def _delta(name: str, row: str, keys: Sequence[str], delta: int, merchant: str) -> str:
    return (f"INSERT INTO kept_count_deltas ({_KEY}, delta)"
            f" VALUES ('{name}', {row}.{merchant}, {_slots(row + '.', keys)}, {delta});")


def _counted(name: str, source: str, keys: Sequence[str], merchant: str, sign: str = "") -> str:
    """``source``'s rows counted per merchant and slots, as ``kept_counts`` rows (negated with ``sign='-'``)."""
    grouped = "".join(f", COALESCE({key}, '')" for key in keys)
    return (f"SELECT '{name}' AS list, {merchant} AS merchant_id, {_slots('', keys)}, {sign}COUNT(*) AS n"
            f" FROM {source} GROUP BY {merchant}{grouped}")


def _counted_list(name: str, source: str, keys: Sequence[str], dialect: str, merchant: str) -> list[str]:
    _checked(name, source, merchant, *keys)
    if len(keys) > len(SLOTS):
        raise ValueError(f"at most {len(SLOTS)} counted keys, not {list(keys)}")
    columns = [merchant, *keys]
    backfill = f"INSERT INTO kept_counts ({_KEY}, n) {_counted(name, source, keys, merchant)}"
    register = (f"INSERT INTO counted_lists (list, source, keys)"
                f" VALUES ('{name}', '{source}', '{','.join(keys)}')")
    # The lists of m0056/m0057 (before m0059 added the column) keep their triggers' names.
    triggers = source
    if merchant != "merchant_id":
        register = (f"INSERT INTO counted_lists (list, source, keys, merchant)"
                    f" VALUES ('{name}', '{source}', '{','.join(keys)}', '{merchant}')")
        triggers = f"{source}_{name}"
    changed = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in columns)
    old_delta, new_delta = (_delta(name, row, keys, sign, merchant) for row, sign in (("OLD", -1), ("NEW", 1)))
    if dialect == "postgresql":
        function = f"orbchain_counted_{name}"
        return [register, backfill,
                f"""CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM kept_count_deltas WHERE list = '{name}';
        DELETE FROM kept_counts WHERE list = '{name}';
        RETURN NULL;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        {old_delta}
    END IF;
    IF TG_OP <> 'DELETE' THEN
        {new_delta}
    END IF;
    RETURN NULL;
END
$$""",
                f"CREATE TRIGGER {triggers}_counted AFTER INSERT OR DELETE ON {source}"
                f" FOR EACH ROW EXECUTE FUNCTION {function}()",
                f"CREATE TRIGGER {triggers}_recounted AFTER UPDATE OF {', '.join(columns)} ON {source}"
                f" FOR EACH ROW WHEN ({changed}) EXECUTE FUNCTION {function}()",
                f"CREATE TRIGGER {triggers}_truncated AFTER TRUNCATE ON {source}"
                f" FOR EACH STATEMENT EXECUTE FUNCTION {function}()"]
    changed = changed.replace("IS DISTINCT FROM", "IS NOT")
    return [register, backfill,
            f"CREATE TRIGGER {triggers}_counted_insert AFTER INSERT ON {source} BEGIN {new_delta} END",
            f"CREATE TRIGGER {triggers}_counted_delete AFTER DELETE ON {source} BEGIN {old_delta} END",
            f"CREATE TRIGGER {triggers}_recounted AFTER UPDATE OF {', '.join(columns)} ON {source} WHEN {changed}"
            f" BEGIN {old_delta} {new_delta} END"]


_PG_FOLD = f"""
WITH batch AS (SELECT id FROM kept_count_deltas ORDER BY id LIMIT :n FOR UPDATE SKIP LOCKED),
moved AS (DELETE FROM kept_count_deltas d USING batch WHERE d.id = batch.id
          RETURNING d.list, d.merchant_id, d.k1, d.k2, d.k3, d.delta),
summed AS (SELECT {_KEY}, SUM(delta) AS n, COUNT(*) AS rows FROM moved GROUP BY {_KEY}),
added AS (INSERT INTO kept_counts ({_KEY}, n)
          SELECT {_KEY}, n FROM summed ORDER BY {_KEY}
          ON CONFLICT ({_KEY}) DO UPDATE SET n = kept_counts.n + EXCLUDED.n)
SELECT COALESCE(SUM(rows), 0) FROM summed"""


async def fold(db: Database, batch: int) -> int:
    """Fold up to ``batch`` deltas (of any list) into ``kept_counts``; how many were folded."""
    if db.is_postgres:
        async with db.transaction():  # a write: never a read a pool might route elsewhere
            return int(await db.fetch_val(_PG_FOLD, {"n": batch}))
    async with db.transaction():
        upto = await db.fetch_val(
            "SELECT MAX(id) FROM (SELECT id FROM kept_count_deltas ORDER BY id LIMIT :n)", {"n": batch})
        if upto is None:
            return 0
        # WHERE before GROUP BY: SQLite's parser needs it to read the ON CONFLICT that follows a SELECT.
        await db.execute(
            f"INSERT INTO kept_counts ({_KEY}, n) SELECT {_KEY}, SUM(delta) FROM kept_count_deltas"
            f" WHERE id <= :upto GROUP BY {_KEY} ON CONFLICT ({_KEY}) DO UPDATE SET n = n + excluded.n",
            {"upto": upto})
        folded = await db.fetch_all("DELETE FROM kept_count_deltas WHERE id <= :upto RETURNING id",
                                    {"upto": upto})
        return len(folded)


async def fold_all(db: Database, *, batch: int, max_batches: int) -> int:
    """Fold batch after batch until a short one or ``max_batches``; how many deltas were folded."""
    return await in_batches(lambda n: fold(db, n), batch, max_batches)


async def _lists(db: Database) -> list[tuple[str, str, list[str], str]]:
    """Every kept list: its name, source table, counted keys and merchant column."""
    rows = await db.fetch_all("SELECT list, source, keys, merchant FROM counted_lists ORDER BY list")
    lists = [(row["list"], row["source"], [k for k in row["keys"].split(",") if k], row["merchant"])
             for row in rows]
    for name, source, keys, merchant in lists:
        _checked(name, source, merchant, *keys)
    return lists




async def mismatches(db: Database) -> list[dict[str, Any]]:
    """Every (list, merchant, keys) whose kept count differs from ``COUNT(*)`` of its source, with the
    difference (kept minus actual) and the keys by name; empty when all agree. One statement: one
    snapshot, so rows written meanwhile cannot show as a false mismatch. Reads every row: an operator's
    check, not a job's."""
    lists = await _lists(db)
    if not lists:
        return []
    actual = " UNION ALL ".join(_counted(*entry, sign="-") for entry in lists)
    rows = await db.fetch_all(
        f"SELECT {_KEY}, SUM(n) AS difference FROM ("
        f" SELECT {_KEY}, n FROM kept_counts"
        f" UNION ALL SELECT {_KEY}, delta FROM kept_count_deltas"
        f" UNION ALL {actual}"
        f") AS kept GROUP BY {_KEY} HAVING SUM(n) <> 0 ORDER BY {_KEY}")
    keys = {name: names for name, _, names, _ in lists}
    return [{"list": row["list"], "merchant_id": row["merchant_id"],
             **{key: row[slot] for slot, key in zip(SLOTS, keys[row["list"]])},
             "difference": int(row["difference"])} for row in rows]


async def rebuild(db: Database) -> None:
    """Recount every list from its source. On PostgreSQL the sources' writers wait
    meanwhile (``SHARE`` lock), so no change falls between the recount and the deletes; SQLite's single
    writer holds its lock anyway."""
    async with db.transaction():
        for name, source, keys, merchant in await _lists(db):
            if db.is_postgres:
                await db.execute(f"LOCK TABLE {source} IN SHARE MODE")
            await db.execute("DELETE FROM kept_count_deltas WHERE list = :l", {"l": name})
            await db.execute("DELETE FROM kept_counts WHERE list = :l", {"l": name})
            await db.execute(f"INSERT INTO kept_counts ({_KEY}, n) {_counted(name, source, keys, merchant)}")
