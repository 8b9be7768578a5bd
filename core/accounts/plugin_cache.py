"""A plugin's per-process cache of its own rows, dropped when they change in any process.

Why its own module: hot paths (every hosted page) read a plugin's rarely changing rows; this
gives them the core's auth cache (core/accounts/auth_cache.py) and its cross-process invalidation.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from . import auth_cache
from ..contract.gateway import PluginGateway as Gateway


async def cached(gateway: "Gateway", table: str, name: Any, load: Callable[[], Awaitable[Any]]) -> Any:
    """``load()``'s answer for ``name`` in the plugin's cache ``table``, loaded once per process until invalidated.

    For a plugin's rows that are read on hot paths (every hosted page) and
    change rarely. Entries go when ``cache_changed`` is called (in this
    process, after the change commits) and, on PostgreSQL, when any process
    commits a change to a table with a trigger running the core's
    ``orbchain_auth_changed()`` (docs/plugins.md, "Caching"); at most 30 s
    in any case. The answer is shared: treat it as read-only. Inside a
    transaction ``load()`` runs every time: what a transaction decides on
    (under the locks it took) must be read in it, never a copy from before.
    """
    if gateway.db.in_transaction:
        return await load()
    return await auth_cache.remembered(gateway, "plugin:" + table, name, load)


def cache_changed(gateway: "Gateway") -> None:
    """Empty this process's caches now (after committing a change to cached rows); others hear the trigger."""
    auth_cache.invalidate(gateway)


async def cache_changed_everywhere(gateway: "Gateway") -> None:
    """``cache_changed``, returning only once no process serves the old answer: for cached *access* (who may
    act, with which permissions), awaited after the commit and before answering (on PostgreSQL every live
    process has acknowledged, core/accounts/auth_fanout.py; on SQLite at once)."""
    await auth_cache.changed(gateway)
