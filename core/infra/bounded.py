"""A map with a size bound, for the per-process caches (pages, credentials, derived keys).

Each of these caches is keyed by something a caller chooses (a key hash, a
page's content, a derivation path), so without a bound a stream of distinct
keys grows memory without limit. Evicting the least recently used entry
keeps the hot entries through such a stream, where emptying the whole map
when full would make every hot entry miss at once.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Generic, Mapping, MutableMapping, Sequence, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LruMap(Generic[K, V]):
    """At most ``size`` entries; ``get`` refreshes an entry, ``put`` evicts the least recently used.

    Not thread-safe: callers on one event loop need no lock; a cache shared
    with threads wraps its calls in one.
    """

    __slots__ = ("_size", "_items")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("an LruMap holds at least one entry")
        self._size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get(self, key: K) -> V | None:
        """The entry of ``key``, or None (a TypeError when ``key`` is unhashable)."""
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        items = self._items
        items[key] = value
        items.move_to_end(key)
        if len(items) > self._size:
            items.popitem(last=False)

    def pop(self, key: K) -> V | None:
        return self._items.pop(key, None)

    def clear(self) -> None:
        self._items.clear()


def values_key(row: Mapping[str, Any], rows: Sequence[Mapping[str, Any]] = ()) -> tuple[Any, ...]:
    """Every value of ``row`` and of ``rows``, as a key for what is built from those rows alone."""
    return tuple(row.values()), tuple(tuple(each.values()) for each in rows)


def remember(store: MutableMapping[str, Any], name: str, size: int, key: Any, build: Callable[[], V]) -> V:
    """``build()``, kept in ``store[name]`` (an ``LruMap`` of ``size``, made on first use) under ``key``.

    For answers that are a function of ``key`` alone, such as a view
    rendered from database rows keyed by ``values_key``: any change to the
    rows is a new key, so nothing needs invalidating. A key with an
    unhashable part is built every time.
    """
    cache = store.get(name)
    if cache is None:
        cache = store[name] = LruMap(size)
    try:
        value = cache.get(key)
    except TypeError:
        return build()
    if value is None:
        value = build()
        cache.put(key, value)
    return value
