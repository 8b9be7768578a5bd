"""SQLite group commit: concurrent ``execute_atomic`` calls committed as one transaction, one fsync.

Why its own module: SQLite serialises commits and each waits for the disk,
so one commit per create capped creates at the disk's fsync rate. Queuing
callers' statements and running a whole group in the writer's thread, each
caller in a savepoint of its own, is the one write path of ``Database``
(core/infra/db.py) with its own machinery.
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import TYPE_CHECKING, Any, AsyncContextManager, Mapping, Sequence

from .db_pinning import current_pin


class GroupCommit:
    """The SQLite half of ``Database.execute_atomic`` outside a transaction."""

    if TYPE_CHECKING:  # pragma: no cover - defined by Database
        _write_lock: asyncio.Lock

        def _count(self, query: str) -> None: ...

        def _sqlite_writer(self) -> AsyncContextManager[None]: ...

    def _init_group_commit(self) -> None:
        # SQLite: execute_atomic calls waiting to be committed together (``_write_groups``).
        self._grouped: list[tuple[list[tuple[str, dict[str, Any]]], asyncio.Future[None]]] = []
        self._group_writer: asyncio.Future[None] | None = None

    async def _commit_grouped(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Queue ``statements`` for the next group and wait until the group committed (or they failed)."""
        for query in ("BEGIN IMMEDIATE", *(query for query, _ in statements), "COMMIT"):
            self._count(query)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._grouped.append(([(q, dict(v)) for q, v in statements], future))
        if self._group_writer is None or self._group_writer.done():
            self._group_writer = asyncio.ensure_future(self._write_groups())
        await future

    async def _write_groups(self) -> None:
        """SQLite group commit: every ``execute_atomic`` waiting for the writer goes in one transaction.

        Each caller's statements run inside their own savepoint (all or none
        for that caller; one caller's failure is its own), and one COMMIT,
        one fsync, makes the whole group durable before any caller hears of
        it. Commits are serialised by SQLite and each waits for the disk: one
        per create capped creates at the disk's fsync rate.
        """
        while self._grouped:
            async with self._write_lock, self._sqlite_writer():
                group = [(batch, future) for batch, future in self._grouped if not future.done()]
                self._grouped = []
                if not group:
                    continue
                pin = current_pin(self)
                assert pin is not None
                try:
                    # One hop to the connection's thread for the whole group.
                    outcomes = await pin.conn._execute(_sqlite_group, pin.conn._conn, [b for b, _ in group])
                except Exception as exc:  # noqa: BLE001 - the whole group rolled back: every caller hears it
                    outcomes = [exc] * len(group)
                except BaseException:  # cancelled (shutdown): the callers' fate is unknown, as a cancelled write's
                    for _, future in group:
                        future.cancel()
                    raise
                for (_, future), outcome in zip(group, outcomes):
                    if future.done():
                        continue
                    if outcome is None:
                        future.set_result(None)
                    else:
                        future.set_exception(outcome)


def _sqlite_group(conn: sqlite3.Connection,
                  batches: list[list[tuple[str, dict[str, Any]]]]) -> list[BaseException | None]:
    """Run in an aiosqlite connection's thread: each batch all or none, the group in one transaction.

    Returns each batch's outcome: None when its statements ran, else the
    exception that rolled it back (to its savepoint) while the others went on.
    """
    outcomes: list[BaseException | None] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statements in batches:
            conn.execute("SAVEPOINT orbchain_group")
            try:
                for query, values in statements:
                    conn.execute(query, values).fetchall()  # stepped to the end (RETURNING)
            except Exception as exc:  # noqa: BLE001 - this batch's failure goes back to its own caller
                conn.execute("ROLLBACK TO orbchain_group")
                outcomes.append(exc)
            else:
                outcomes.append(None)
            conn.execute("RELEASE orbchain_group")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return outcomes
