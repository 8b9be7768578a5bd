"""Keyed reads: concurrent reads of one row by key sent as one statement on PostgreSQL.

Why its own module: a round trip is most of a primary-key read's cost, so
requests reading the same kind of row at once (a payment by track id)
share one; declaring such a read (``KeyedRead``) and batching it are
apart from the rest of ``Database`` (core/infra/db.py), which offers it as
``fetch_keyed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Mapping

import asyncpg

from .db_dialect import pg_bind
from .db_faults import connection_gone
from .db_pinning import current_pin
from .pg_groups import Groups

# Batched keyed reads of one kind running at once (``fetch_keyed``): one slow round trip holds up only its own.
READ_GROUPS_IN_FLIGHT = 4


@dataclass(frozen=True)
class KeyedRead:
    """A read of at most one row by a key, written twice: for one key and for many.

    ``one`` takes ``:key``; ``many`` takes ``:keys`` (a list, e.g. ``WHERE
    track_id = ANY(:keys)``) and returns the rows' ``column``, the key, so
    each row finds its caller. ``Database.fetch_keyed`` sends concurrent
    reads as one ``many`` on PostgreSQL. Declare one per read, at module
    level: the batches are kept per instance.
    """

    one: str
    many: str
    column: str


class KeyedReads:
    """The ``fetch_keyed`` half of ``Database``."""

    if TYPE_CHECKING:  # pragma: no cover - defined by Database
        @property
        def is_postgres(self) -> bool: ...

        def _count(self, query: str) -> None: ...

        async def fetch_one(self, query: str, values: Mapping[str, Any] | None = None) -> Mapping[str, Any] | None:
            ...

    def _init_keyed_reads(self) -> None:
        # PostgreSQL: fetch_keyed calls of pinned tasks, read together per KeyedRead (core/infra/pg_groups.py).
        self._read_groups: dict[KeyedRead, Groups[Any]] = {}

    async def fetch_keyed(self, read: KeyedRead, key: Any) -> Mapping[str, Any] | None:
        """The row ``read.one`` finds for ``key``, or None.

        On PostgreSQL a task with a pinned connection (every API request)
        outside a transaction shares the round trip: reads of the same
        ``KeyedRead`` arriving while one is in flight go next as one
        ``read.many`` (core/infra/pg_groups.py). A round trip (a send, a receive,
        asyncpg's per-query work) is most of a primary-key read's cost in
        this process, and under load it is paid once for many requests. The
        row is read after the request arrived, as alone. Elsewhere, and on
        SQLite (read on the loop's thread), it is ``fetch_one``.
        """
        pin = current_pin(self) if self.is_postgres else None
        if pin is None or pin.tx_depth:
            return await self.fetch_one(read.one, {"key": key})
        groups = self._read_groups.get(read)
        if groups is None:
            groups = self._read_groups[read] = Groups(partial(self._read_group, read), READ_GROUPS_IN_FLIGHT)
        return await groups.submit(pin.conn, key)

    async def _read_group(self, read: KeyedRead, conn: Any, keys: list[Any]) -> list[Any]:
        """Each key's row (a dict of its own) or None; an error only the key's own read would meet, alone."""
        distinct = list(dict.fromkeys(keys))
        if len(distinct) > 1:
            self._count(read.many)
            sql, args = pg_bind(read.many, {"keys": distinct})
            try:
                found = {record[read.column]: record for record in await conn.fetch(sql, *args)}
                return [None if (record := found.get(key)) is None else dict(record.items()) for key in keys]
            except asyncpg.PostgresError as exc:
                if connection_gone(conn, exc):
                    raise
                # Nothing was read: each key alone, so only a failing read's caller hears its error.
        outcomes: dict[Any, Any] = {}
        for key in distinct:
            self._count(read.one)
            sql, args = pg_bind(read.one, {"key": key})
            try:
                record = await conn.fetchrow(sql, *args)
                outcomes[key] = None if record is None else record
            except asyncpg.PostgresError as exc:
                if connection_gone(conn, exc):
                    raise
                outcomes[key] = exc
        return [outcome if outcome is None or isinstance(outcome, BaseException) else dict(outcome.items())
                for outcome in (outcomes[key] for key in keys)]
