"""Which connection the current task uses: one pinned for a request or a transaction, else one per statement.

Why its own module: every statement ``Database`` (core/infra/db.py) runs first
asks whether its task has a connection pinned (``connection()``, a
transaction, the SQLite writer); that bookkeeping, a context variable
checked against the running task, is the same for both dialects.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol


@dataclass(eq=False)
class Pin:
    """The connection one task is using (pinned by ``connection()`` or a transaction)."""

    task: asyncio.Task | None
    conn: Any
    # The ``Database`` the connection is of: a task may use two (``Gateway.reports_db``, a standby, beside
    # ``db``), and a statement for one must never run on the other's pinned connection.
    owner: Any = None
    tx_depth: int = 0
    savepoints: itertools.count = field(default_factory=itertools.count)
    # ``Database.on_commit`` callbacks of the transaction in progress, run once it committed.
    after_commit: list[Callable[[], None]] = field(default_factory=list)


# The connection the current task has pinned. Tasks spawned from inside inherit
# the variable but are not that task, so they take a connection of their own
# (and on SQLite wait for the writer lock) instead of interleaving statements.
pinned: contextvars.ContextVar[Pin | None] = contextvars.ContextVar("orbchain_db_pin", default=None)


def current_pin(owner: object) -> Pin | None:
    """The current task's pinned connection of database ``owner``, or None (one inherited from the spawning
    task, or pinned of another database, does not count)."""
    pin = pinned.get()
    if pin is not None and pin.task is asyncio.current_task() and pin.owner is owner:
        return pin
    return None


def in_write_tx(owner: object) -> bool:
    """Whether the current task is inside a transaction of database ``owner``."""
    pin = current_pin(owner)
    return pin is not None and pin.tx_depth > 0


class Lender(Protocol):
    """What lends connections (``Database``): one out, one back."""

    async def _acquire(self) -> Any: ...

    async def _release(self, conn: Any) -> None: ...


class Borrowed:
    """``Database._conn()``: a plain class, not ``@asynccontextmanager``, as it wraps every statement.

    A generator-based context manager costs a generator, a frame and two
    extra awaits per use, a few per cent of a payment read.
    """

    __slots__ = ("_db", "_conn")

    def __init__(self, db: Lender) -> None:
        self._db = db
        self._conn: Any = None

    async def __aenter__(self) -> Any:
        pin = current_pin(self._db)
        if pin is not None:
            return pin.conn
        self._conn = await self._db._acquire()
        return self._conn

    async def __aexit__(self, *exc: object) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await self._db._release(conn)


class Pinning:
    """``Database.connection()``: pins a connection to the task unless one already is."""

    __slots__ = ("_db", "_conn", "_token")

    def __init__(self, db: Lender) -> None:
        self._db = db
        self._conn: Any = None
        self._token: contextvars.Token | None = None

    async def __aenter__(self) -> None:
        if current_pin(self._db) is not None:
            return
        self._conn = await self._db._acquire()
        self._token = pinned.set(Pin(asyncio.current_task(), self._conn, owner=self._db))

    async def __aexit__(self, *exc: object) -> None:
        if self._token is None:
            return
        token, conn, self._token, self._conn = self._token, self._conn, None, None
        pinned.reset(token)
        await self._db._release(conn)
