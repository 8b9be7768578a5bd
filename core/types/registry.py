"""The base of every registry plugins fill at start, and the error a bad contribution raises.

Why on the ground floor: coins (money) and address families (keys) are registries too, and they stand
below the plugin contract; the contract's own registries build on this one.
"""

from __future__ import annotations

from typing import Generic, Iterator, TypeVar

T = TypeVar("T")


class StartupError(RuntimeError):
    """The gateway cannot start: a conflict or a bad contribution from a plugin."""


class Registry(Generic[T]):
    """Named items contributed by plugins; ``current_plugin`` is set by the collector."""

    kind = "item"

    def __init__(self) -> None:
        self._items: dict[str, T] = {}
        self._owners: dict[str, str] = {}
        self.current_plugin = "core"

    def _key(self, item: T) -> object:
        """The item's ``name``; ``add`` refuses anything but a non-empty string (registries keyed
        otherwise override this, so ``T`` has no bound)."""
        return getattr(item, "name", None)

    def add(self, item: T) -> T:
        key = self._key(item)
        if not key or not isinstance(key, str):
            raise StartupError(f"plugin {self.current_plugin!r} registered a {self.kind} without a name")
        if key in self._items:
            raise StartupError(
                f"duplicate {self.kind} {key!r}: registered by plugin {self._owners[key]!r} "
                f"and by plugin {self.current_plugin!r}"
            )
        self._items[key] = item
        self._owners[key] = self.current_plugin
        return item

    def get(self, key: str) -> T | None:
        return self._items.get(key)

    def __getitem__(self, key: str) -> T:
        return self._items[key]

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[T]:
        return iter(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def names(self) -> list[str]:
        return list(self._items)

    def owner(self, key: str) -> str:
        return self._owners[key]
