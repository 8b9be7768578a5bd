"""A payment's rows per process on PostgreSQL, dropped by the change feed: an unchanged payment costs no query.

Why: merchants poll ``GET /v1/payment/{id}`` and payers keep ``/pay/{id}``
open while they pay; the payment and its deposits change a handful of times
in its life. Every change is announced on ``gateway.signals`` in every
process: the core's own writes on the ``payment`` topic after the commit
(core/payments/changes.py), and any write to ``payments`` or ``deposits``,
whoever runs it (a plugin, a job, psql), on ``payment_rows`` by the triggers
of migration m0047, at its commit. An entry is dropped when either names it.

The staleness bound is one notification: a process serves the old rows
until the NOTIFY of a commit made elsewhere reaches its side connection
(milliseconds). Entries are trusted only while that connection is healthy
(the auth cache's rule, core/accounts/auth_cache.py: a lost session means no
caching until it is back, and a reconnect empties the cache through
``signals.RESET``); a read that raced an invalidation does not store what it
read; ``MAX_AGE_SECONDS`` bounds an entry anyway. SQLite reads the rows every
time (its other processes, the CLI's, have no feed to announce their writes).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

from ..accounts.auth_cache import auth_cache
from ..infra.bounded import LruMap
from ..infra.signals import RESET
from ..contract.gateway import PluginGateway as Gateway
from .changes import ROWS_CACHE, TOPIC
from ..types.services import ServiceKey

ROWS_TOPIC = "payment_rows"  # published by the triggers of migrations/m0047_payment_row_notify.py
MAX_AGE_SECONDS = 30.0
MAX_ENTRIES = 512  # about 2.6 KB each (row and deposits): 1.3 MB per process once full (tests/test_cache_footprint.py)

Rows = tuple[dict[str, Any], list[Mapping[str, Any]]]


class PaymentRows:
    """track_id -> (read at, row, deposits); ``generation`` moves on every invalidation."""

    def __init__(self, trusted: Callable[[], bool], clock: Callable[[], float] = time.monotonic) -> None:
        self._trusted = trusted
        self._clock = clock
        self._entries: LruMap[str, tuple[float, Rows]] = LruMap(MAX_ENTRIES)
        self.generation = 0

    def get(self, track_id: str) -> Rows | None:
        entry = self._entries.get(track_id)
        if entry is None or not self._trusted():
            return None
        if self._clock() - entry[0] > MAX_AGE_SECONDS:
            self._entries.pop(track_id)
            return None
        return entry[1]

    def put(self, track_id: str, rows: Rows, generation: int) -> None:
        """Keep rows read in ``generation`` (dropped when an invalidation came in between)."""
        if generation == self.generation and self._trusted():
            self._entries.put(track_id, (self._clock(), rows))

    def changed(self, track_id: str) -> None:
        self.generation += 1
        self._entries.pop(track_id)

    def clear(self, _payload: str = "") -> None:
        self.generation += 1
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


SERVICE = ServiceKey(ROWS_CACHE.name, PaymentRows)  # the feed's ROWS_CACHE, with the whole cache's type


def payment_rows(gateway: "Gateway") -> PaymentRows | None:
    """The gateway's cache, made and subscribed to the feed on first use; None on SQLite."""
    rows = gateway.services.get(SERVICE)
    if rows is None:
        if not gateway.db.is_postgres:
            return None
        rows = gateway.services[SERVICE] = PaymentRows(auth_cache(gateway).trusted)
        for topic in (TOPIC, ROWS_TOPIC):
            gateway.signals.subscribe(topic, rows.changed)
        gateway.signals.subscribe(RESET, rows.clear)
    return rows


def copy(rows: Rows) -> Rows:
    """The caller's own row and list (the cached ones are shared by every request)."""
    row, deposits = rows
    return dict(row), list(deposits)

