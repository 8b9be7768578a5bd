"""PostgreSQL groups: concurrent writes share a round trip and a commit, concurrent keyed reads a round trip.

``Groups`` is the mechanism: callers arriving while a group is in flight
wait, and the next group takes them all, led by one of them on its own
connection. ``WriteGroups`` uses it for ``Database.execute_atomic`` (one
group in flight); ``Database.fetch_keyed`` for reads of one row by key
(several in flight, so a slow round trip holds up only its own callers).

Each create's write is one statement already (core/infra/db.py); at 50 concurrent
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
from typing import Any, Awaitable, Callable, Generic, TypeVar

import asyncpg

from .db_faults import connection_gone

_LEAD = object()  # a waiting caller's future result: "you lead the next group"

P = TypeVar("P")
# Runs one group on the leader's connection: one outcome per payload, in order (a value, or the
# exception that caller alone must hear).
GroupRunner = Callable[[asyncpg.Connection, list[P]], Awaitable[list[Any]]]


@dataclass(eq=False)
class _Entry(Generic[P]):
    payload: P
    future: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class Groups(Generic[P]):
    """Callers that arrive while ``max_in_flight`` groups are running wait, and the next group takes them all.

    The first caller runs at once (no added wait when the process is idle);
    the more requests arrive during one round trip, the more share the
    next. ``run`` is called with the leader's connection. With more than
    one group in flight, a round trip the server is slow to answer (a
    process descheduled, a checkpoint) holds up only its own group: the
    others keep serving the waiting callers.
    """

    def __init__(self, run: "GroupRunner[P]", max_in_flight: int = 1) -> None:
        self._run = run
        self._max = max_in_flight
        self._waiting: list[_Entry[P]] = []
        self._in_flight = 0

    async def submit(self, conn: asyncpg.Connection, payload: P) -> Any:
        """``payload``'s outcome: returned, or raised when it is an exception.

        ``conn`` is the caller's own connection, used if it leads a group.
        Every caller brings one: a leader still waiting for the pool while
        waiting callers held the connections would wait for ever.
        """
        entry: _Entry[P] = _Entry(payload)
        if self._in_flight >= self._max:
            self._waiting.append(entry)
            try:
                outcome = await entry.future
            except asyncio.CancelledError:
                future = entry.future
                if future.done() and not future.cancelled() and future.result() is _LEAD:
                    self._in_flight -= 1  # handed the lead and its slot, then cancelled: pass them on
                    self._hand_over()
                raise
            if outcome is not _LEAD:
                return outcome  # done in another caller's group
        else:
            self._in_flight += 1
        group = [entry, *(e for e in self._waiting if not e.future.done())]
        self._waiting = []
        try:
            outcomes = await self._run(conn, [e.payload for e in group])
        except BaseException as exc:  # the connection failed or the leader was cancelled: all alike
            for other in group[1:]:
                if other.future.done():
                    continue
                if isinstance(exc, Exception):
                    other.future.set_exception(exc)
                else:
                    other.future.cancel()
            self._in_flight -= 1
            self._hand_over()
            raise
        self._in_flight -= 1
        self._hand_over()
        for each, outcome in zip(group[1:], outcomes[1:]):
            if each.future.done():
                continue
            if isinstance(outcome, BaseException):
                each.future.set_exception(outcome)
            else:
                each.future.set_result(outcome)
        if isinstance(outcomes[0], BaseException):
            raise outcomes[0]
        return outcomes[0]

    def _hand_over(self) -> None:
        """Give the lead, with a free slot, to the first caller still waiting."""
        while self._waiting and self._in_flight < self._max:
            first = self._waiting.pop(0)
            if first.future.done():  # cancelled while waiting: nothing was done for it
                continue
            first.future.set_result(_LEAD)
            self._in_flight += 1
            return


@dataclass(frozen=True)
class _Write:
    sql: str
    args: list[Any]


class WriteGroups:
    """The writes of one process waiting to go together (one instance per ``Database``)."""

    def __init__(self) -> None:
        self._groups: Groups[_Write] = Groups(_write_group)

    async def write(self, conn: asyncpg.Connection, sql: str, args: list[Any]) -> None:
        """Run ``sql`` with ``args`` (positional, committed on its own), grouped with concurrent writes."""
        await self._groups.submit(conn, _Write(sql, args))


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
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            if connection_gone(conn, exc):
                raise
            # Nothing of the group was committed: each alone, so only a failing write's caller hears.
    outcomes: list[BaseException | None] = []
    for write in group:
        try:
            await conn.fetchval(write.sql, *write.args)
            outcomes.append(None)
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            if connection_gone(conn, exc):
                raise
            outcomes.append(exc)
    return outcomes
