"""PostgreSQL group commit of ``Database.execute_atomic``: concurrent writes share a round trip and a commit.

Each create's write is one statement already (core/db.py); at 50 concurrent
creates what was left was its round trip: asyncpg's per-query work, a send
and a receive, and a commit each. Here writers that arrive while another
group is in flight wait, and the next group goes as one ``executemany``
(pipelined binds, one Sync: one round trip and one transaction).

No connection is taken for a group: it runs on the pinned connection of
one of its own writers, the leader (every API request pins one, see
web/middlewares.py). A writer holding a connection while waiting for a
group that needs another could otherwise exhaust the pool. When a group is
done the leader hands the role to the first writer still waiting.

Each writer hears its own outcome: when the group's statement fails on
the server (a unique violation, bad data), every write of the group is
retried alone on the same connection, so only the failing one's caller
sees its error, as if it had written alone. A failure of the connection
itself reaches every writer of the group, as it would have reached each.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import asyncpg

_LEAD = object()  # a waiting writer's future result: "you lead the next group"


@dataclass(eq=False)
class _Write:
    sql: str
    args: list[Any]
    future: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class WriteGroups:
    """The writes of one process waiting to go together (one instance per ``Database``)."""

    def __init__(self) -> None:
        self._waiting: list[_Write] = []
        self._leading = False

    async def write(self, conn: asyncpg.Connection, sql: str, args: list[Any]) -> None:
        """Run ``sql`` with ``args`` (positional, committed on its own), grouped with concurrent writes."""
        entry = _Write(sql, args)
        self._waiting.append(entry)
        if self._leading:
            try:
                role = await entry.future
            except asyncio.CancelledError:
                future = entry.future
                if future.done() and not future.cancelled() and future.result() is _LEAD:
                    self._waiting.remove(entry)  # handed the lead, then cancelled: pass it on
                    self._hand_over()
                raise
            if role is not _LEAD:
                return  # written by another writer's group
        self._leading = True
        group = [w for w in self._waiting if w is entry or not w.future.done()]
        self._waiting = []
        try:
            outcomes = await _write_group(conn, group)
        except BaseException as exc:  # the connection failed or the leader was cancelled: all alike
            for other in group:
                if other is entry or other.future.done():
                    continue
                if isinstance(exc, Exception):
                    other.future.set_exception(exc)
                else:
                    other.future.cancel()
            self._hand_over()
            raise
        self._hand_over()
        mine = None
        for write, outcome in zip(group, outcomes):
            if write is entry:
                mine = outcome
            elif write.future.done():
                continue
            elif outcome is None:
                write.future.set_result(None)
            else:
                write.future.set_exception(outcome)
        if mine is not None:
            raise mine

    def _hand_over(self) -> None:
        """Give the lead to the first writer still waiting, else leave it free."""
        while self._waiting:
            first = self._waiting[0]
            if first.future.done():  # cancelled while waiting: it wrote nothing
                self._waiting.pop(0)
                continue
            first.future.set_result(_LEAD)
            return
        self._leading = False


async def _write_group(conn: asyncpg.Connection, group: list[_Write]) -> list[BaseException | None]:
    """Each write's outcome: None when committed, else the error that refused it alone."""
    if len(group) > 1:
        by_sql: dict[str, list[list[Any]]] = {}
        for write in group:
            by_sql.setdefault(write.sql, []).append(write.args)
        try:
            if len(by_sql) == 1:
                [(sql, rows)] = by_sql.items()
                await conn.executemany(sql, rows)  # atomic: one implicit transaction
            else:
                async with conn.transaction():
                    for sql, rows in by_sql.items():
                        await conn.executemany(sql, rows)
            return [None] * len(group)
        except (asyncpg.PostgresError, asyncpg.InterfaceError):
            if conn.is_closed():
                raise
            # Nothing of the group was committed: each alone, so only a failing write's caller hears.
    outcomes: list[BaseException | None] = []
    for write in group:
        try:
            await conn.fetchval(write.sql, *write.args)
            outcomes.append(None)
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            if conn.is_closed():
                raise
            outcomes.append(exc)
    return outcomes
