"""Authenticated API keys and dashboard-token checks, cached per process.

Every request used to look its key up (a join) and every dashboard request
read ``merchants``; together about a sixth of a read. This cache keeps what
those look-ups found, keyed by the SHA-256 of the presented key (the
plaintext is never kept) or by merchant id.

Revoking or rotating a key, disabling an account or bumping its
``token_version`` must take effect at once in every process (SPEC 4.9, no
propagation window), so:

* the process that makes the change empties its own cache and waits until
  every other live process has acknowledged it (``changed``,
  core/accounts/auth_fanout.py), so the change is in force everywhere before the
  client hears it is done;
* on PostgreSQL, triggers on ``merchants``, ``api_keys`` and
  ``api_key_secrets`` (migration m0010) NOTIFY ``orbchain_auth`` in the
  changing transaction, whoever runs it, and every process's side connection
  (core/infra/pg_side.py) empties its cache when the notification arrives;
* a cache is trusted only while that connection is healthy (LISTENing, and
  a heartbeat answered within 3 s): a lost session, and with it possibly a
  lost notification, means no caching until it is back;
* a look-up that raced an invalidation does not store its (maybe stale)
  answer: entries carry the generation they were read in;
* entries expire after ``MAX_AGE_SECONDS`` anyway.

SQLite deployments are one process; the cache is invalidated in process.
Negative answers (unknown keys) are never cached, so a new key works at once.

Other per-process copies of rows that change rarely and are read on every
request (a merchant's settings for payment creation, a brand's page looks)
live here too, in named tables (``remembered``): they are emptied by the same
notifications and the same in-process ``invalidate``/``changed`` calls, so
a table whose changes NOTIFY ``orbchain_auth`` (a trigger running
``orbchain_auth_changed()``, migration m0010) can be cached in every
process without a staleness window of its own.
"""

from __future__ import annotations

import time
from typing import Any, Awaitable, Callable, Protocol

from ..infra.bounded import LruMap
from ..contract.gateway import PluginGateway as Gateway
from ..types.services import ServiceKey

MAX_AGE_SECONDS = 30.0
MAX_ENTRIES = 10_000
CHANNEL = "orbchain_auth"
TOUCH_SECONDS = 60


class AuthCache:
    def __init__(self, trusted: Callable[[], bool] = lambda: True, clock: Callable[[], float] = time.monotonic) -> None:
        self._trusted = trusted
        self._clock = clock
        self._tables: dict[str, LruMap[Any, tuple[float, Any]]] = {}
        self._keys = self._table("keys")
        self._merchants = self._table("merchants")
        self._touched: LruMap[str, int] = LruMap(MAX_ENTRIES)
        self.generation = 0

    def _table(self, name: str) -> LruMap[Any, tuple[float, Any]]:
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = LruMap(MAX_ENTRIES)
        return table

    def trusted(self) -> bool:
        """Whether this process hears every change now (on PostgreSQL: its side connection is healthy)."""
        return self._trusted()

    def invalidate(self) -> None:
        """Forget every entry of every table; look-ups in flight will not store theirs."""
        self.generation += 1
        for table in self._tables.values():
            table.clear()

    def _get(self, table: LruMap[Any, tuple[float, Any]], name: Any) -> Any:
        entry = table.get(name)
        if entry is None or not self._trusted():
            return None
        if self._clock() - entry[0] > MAX_AGE_SECONDS:
            table.pop(name)
            return None
        return entry[1]

    def _put(self, table: LruMap[Any, tuple[float, Any]], name: Any, value: Any, generation: int) -> None:
        if generation != self.generation or not self._trusted():
            return
        table.put(name, (self._clock(), value))

    def key(self, digest: str) -> Any:
        return self._get(self._keys, digest)

    def put_key(self, digest: str, match: Any, generation: int) -> None:
        self._put(self._keys, digest, match, generation)

    def merchant(self, merchant_id: str) -> Any:
        return self._get(self._merchants, merchant_id)

    def put_merchant(self, merchant_id: str, row: Any, generation: int) -> None:
        self._put(self._merchants, merchant_id, row, generation)

    def get(self, table: str, name: Any) -> Any:
        """An entry of a named table, None when absent, expired or untrusted (so None is never a cached answer)."""
        return self._get(self._table(table), name)

    def put(self, table: str, name: Any, value: Any, generation: int) -> None:
        """Store an entry read in ``generation`` (dropped if an invalidation came in between)."""
        self._put(self._table(table), name, value, generation)

    def should_touch(self, key_id: str, stored_last_used: int | None, now: int) -> bool:
        """Whether to record a key's use now: at most once a minute per key and process."""
        last = max(stored_last_used or 0, self._touched.get(key_id) or 0)
        if now - last < TOUCH_SECONDS:
            return False
        self._touched.put(key_id, now)
        return True


class Propagates(Protocol):
    """What ``changed`` needs of core/accounts/auth_fanout.py's ``AuthFanout`` (which imports this module)."""

    async def propagate(self) -> None: ...


AUTH_CACHE = ServiceKey("auth_cache", AuthCache)
AUTH_FANOUT = ServiceKey[Propagates]("auth_fanout")  # PostgreSQL only (core/accounts/coordination.py)


def auth_cache(gateway: "Gateway") -> AuthCache:
    """The gateway's cache; on PostgreSQL without a side connection, one that never trusts itself."""
    cache = gateway.services.get(AUTH_CACHE)
    if cache is None:
        postgres = gateway.db.is_postgres
        cache = gateway.services[AUTH_CACHE] = AuthCache(lambda: not postgres)
    return cache


async def remembered(gateway: "Gateway", table: str, name: Any, load: Callable[[], Awaitable[Any]]) -> Any:
    """``load()``'s answer for ``name``, from this process's cache when it holds one.

    For rows read on every request that change rarely; the answer is cached
    until any credential change or a NOTIFY on ``orbchain_auth`` empties the
    cache (see the module docstring), and at most ``MAX_AGE_SECONDS``. The
    caller must treat the answer as read-only: it is shared. None answers are
    cached as well (a merchant without brands).
    """
    cache = auth_cache(gateway)
    entry = cache.get(table, name)
    if entry is not None:
        return entry[0]
    generation = cache.generation
    value = await load()
    cache.put(table, name, (value,), generation)
    return value


def invalidate(gateway: "Gateway") -> None:
    """Empty this process's cache (only; see ``changed`` for every process)."""
    cache = gateway.services.get(AUTH_CACHE)
    if cache is not None:
        cache.invalidate()


async def changed(gateway: "Gateway") -> None:
    """Call after committing a change to a key or an account's enabled/token_version, before answering.

    Returns once no process will serve the old state from its cache
    (core/accounts/auth_fanout.py on PostgreSQL; at once on SQLite).
    """
    invalidate(gateway)
    fanout = gateway.services.get(AUTH_FANOUT)
    if fanout is not None:
        await fanout.propagate()
