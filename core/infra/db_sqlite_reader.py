"""SQLite reads on the event loop's thread: a read-only connection that gives way when a read would wait.

Why its own module: a hop to an aiosqlite thread and back cost more CPU
than a primary-key read itself, so short reads run inline on a connection
of their own, and everything that keeps that safe (a step budget, busy
timeout 0, read-only, statements that overran sent to a thread for a
while) lives with it. ``Database`` (core/infra/db.py) tries it first on SQLite.
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import TYPE_CHECKING, Any, Mapping
from urllib.parse import parse_qsl, quote, urlencode

from .db_pinning import current_pin

# SQLite reads on the event loop's thread (``Database._read_inline``, docs/decisions.md): the VM steps a
# statement may take there before it is stopped and run on a connection's thread instead (~0.2-0.6 ms),
# counted in calls of the progress handler every ``SQLITE_INLINE_TICK`` steps; the runs of a statement
# that overran that go straight to a thread; one inline read in so many yields to the loop.
SQLITE_INLINE_STEPS = 10_000
SQLITE_INLINE_TICK = 1_000
SQLITE_INLINE_PAUSE = 100
SQLITE_INLINE_YIELD_EVERY = 32
SQLITE_READER_STATEMENTS = 512  # prepared statements the inline reader keeps (sqlite3's default is 128)
# Why an inline read gives way to a thread (primary result codes): stopped at its step budget, would
# wait for a lock (busy timeout 0), or writes (the connection is read-only). Nothing was done.
_SQLITE_INTERRUPT = 9
_SQLITE_GIVE_WAY = frozenset({5, 6, 8, _SQLITE_INTERRUPT})  # BUSY, LOCKED, READONLY, INTERRUPT


class InlineReads:
    """The inline-read half of ``Database`` on SQLite: ``_read_inline`` and its bookkeeping."""

    if TYPE_CHECKING:  # pragma: no cover - defined by Database
        def _count(self, query: str) -> None: ...

    def _init_inline_reads(self) -> None:
        self._reader: InlineReader | None = None  # SQLite: reads on the loop's thread (``_read_inline``)
        self._overran: dict[str, int] = {}  # statement -> runs left to send straight to a thread
        self._inline_reads = 0

    def _read_inline(self, query: str, values: Mapping[str, Any] | None) -> list[dict[str, Any]] | None:
        """A SQLite read run on the event loop's thread; None: run it on a connection's thread instead.

        A hop to an aiosqlite thread and back (a queue, a thread wake-up,
        ``call_soon_threadsafe``, GIL hand-offs) cost about 100 us of CPU a
        read under load, more than a primary-key read itself. A task inside
        a write transaction reads on its own connection (its uncommitted
        writes). The read-only connection is in autocommit, so every
        statement sees the last commit (WAL), and it never waits: a
        statement that would wait for a lock (busy timeout 0), write, or run
        past ``SQLITE_INLINE_STEPS`` is stopped with nothing done and goes to
        a thread as before, the last one straight there for its next
        ``SQLITE_INLINE_PAUSE`` runs (a long list need not pay twice). Any
        other error is the statement's own and surfaces as it is.
        """
        reader = self._reader
        if reader is None or (self._overran and self._paused(query)):
            return None
        pin = current_pin(self)
        if pin is not None and (pin.tx_depth or pin.conn.in_transaction):
            return None
        try:
            rows = reader.rows(query, values)
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF in _SQLITE_GIVE_WAY:
                if exc.sqlite_errorcode & 0xFF == _SQLITE_INTERRUPT:
                    if len(self._overran) >= 1024:
                        self._overran.clear()
                    self._overran[query] = SQLITE_INLINE_PAUSE
                return None
            self._count(query)
            raise
        except sqlite3.Error:
            self._count(query)
            raise
        if reader.in_transaction:  # it began one (BEGIN, SAVEPOINT): that belongs on the task's connection
            reader.execute("ROLLBACK")
            return None
        self._count(query)
        return rows

    def _paused(self, query: str) -> bool:
        """Whether ``query`` overran the inline budget lately: one run fewer to send to a thread."""
        left = self._overran.get(query)
        if left is None:
            return False
        if left > 1:
            self._overran[query] = left - 1
        else:
            del self._overran[query]
        return True

    async def _inline(self, query: str, values: Mapping[str, Any] | None) -> list[dict[str, Any]] | None:
        """``_read_inline``, now and then yielding to the loop as the hop did (a task reading in a loop)."""
        rows = self._read_inline(query, values)
        if rows is not None:
            self._inline_reads += 1
            if not self._inline_reads % SQLITE_INLINE_YIELD_EVERY:
                await asyncio.sleep(0)
        return rows


class InlineReader(sqlite3.Connection):
    """The read-only connection of ``Database._read_inline``, used on the event loop's thread only.

    Its progress handler (``_tick``) runs every ``SQLITE_INLINE_TICK`` VM
    steps and stops the statement once its budget is spent. SQLite counts a
    prepared statement's steps over all its runs (the cache reuses it), so
    a budget of a single call would stop one short read in a hundred: each
    statement gets its own count of calls instead.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ticks_left = 0
        self.set_progress_handler(self._tick, SQLITE_INLINE_TICK)

    def _tick(self) -> bool:
        self.ticks_left -= 1
        return self.ticks_left < 0

    def rows(self, query: str, values: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """Every row as a dict, as ``dict_row`` gives them (the column names taken once)."""
        self.ticks_left = SQLITE_INLINE_STEPS // SQLITE_INLINE_TICK
        cursor = self.execute(query, values or {})
        try:
            description = cursor.description
            rows = cursor.fetchall()
        finally:
            cursor.close()
        if description is None:
            return []
        names = [column[0] for column in description]
        return [dict(zip(names, row)) for row in rows]


def sqlite_reader(target: str, uri: bool) -> InlineReader | None:
    """A read-only connection to ``target`` for ``Database._read_inline``; None when there can be none.

    Autocommit (no read transaction outlives a statement), busy timeout 0
    (a lock is waited for on a thread, never on the loop), a private cache,
    and the schema loaded now, outside the step budget. An in-memory
    database cannot be shared with a second connection, and one that cannot
    be opened read-only keeps every read on the threads.
    """
    path, _, query = target.removeprefix("file:").partition("?") if uri else (target, "", "")
    options = parse_qsl(query, keep_blank_values=True)
    if path in ("", ":memory:") or ("mode", "memory") in options:
        return None
    if not uri:
        path = quote(path, safe="/")
    options = [(k, v) for k, v in options if k not in ("mode", "cache")] + [("mode", "ro")]
    try:
        reader = sqlite3.connect(f"file:{path}?{urlencode(options)}", uri=True, timeout=0, isolation_level=None,
                                 check_same_thread=False, cached_statements=SQLITE_READER_STATEMENTS,
                                 factory=InlineReader)
    except sqlite3.Error:
        return None
    try:
        reader.ticks_left = 1 << 30
        reader.execute("SELECT 1 FROM sqlite_master LIMIT 1").close()
    except sqlite3.Error:
        reader.close()
        return None
    return reader
