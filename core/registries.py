"""Registries that collection hooks fill (``register_coins(registry)`` ...).

Each remembers which plugin added what, so a name registered twice fails at
startup with an error naming both plugins instead of one silently winning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Generic, Iterator, TypeVar

from aiohttp import web

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

    def _key(self, item: T) -> str:
        return getattr(item, "name")

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


class ChainRegistry(Registry[Any]):
    kind = "chain"


class PriceSourceRegistry(Registry[Any]):
    kind = "price source"


@dataclass(frozen=True)
class Job:
    """A periodic job: ``await func(gateway)`` every ``seconds``."""

    name: str
    func: Callable[[Any], Awaitable[None]]
    seconds: float


class JobRegistry(Registry[Job]):
    kind = "job"

    def add(self, name: str | Job, func: Callable[[Any], Awaitable[None]] | None = None, *, seconds: float = 60) -> Job:  # type: ignore[override]
        job = name if isinstance(name, Job) else Job(name, func, seconds)  # type: ignore[arg-type]
        if job.seconds <= 0:
            raise StartupError(f"job {job.name!r} needs a positive interval")
        return super().add(job)


class RouteRegistry(Registry[web.RouteTableDef]):
    """Route tables; a (method, path) pair added twice fails startup."""

    kind = "route"

    def __init__(self) -> None:
        super().__init__()
        self._tables: list[web.RouteTableDef] = []

    def add(self, routes: web.RouteTableDef) -> web.RouteTableDef:  # type: ignore[override]
        for route in routes:
            if isinstance(route, web.RouteDef):
                key = f"{route.method} {route.path}"
                if key in self._items:
                    raise StartupError(
                        f"duplicate route {key!r}: registered by plugin {self._owners[key]!r} "
                        f"and by plugin {self.current_plugin!r}"
                    )
                self._items[key] = routes
                self._owners[key] = self.current_plugin
        self._tables.append(routes)
        return routes

    def tables(self) -> list[web.RouteTableDef]:
        return list(self._tables)


@dataclass(frozen=True)
class Command:
    """A CLI sub-command contributed by a plugin (see ``register_commands``)."""

    name: str
    help: str
    configure: Callable[[Any], None]


class CommandRegistry(Registry[Command]):
    kind = "command"

    def add(self, name: str | Command, help: str = "", configure: Callable[[Any], None] | None = None) -> Command:  # type: ignore[override]
        command = name if isinstance(name, Command) else Command(name, help, configure)  # type: ignore[arg-type]
        return super().add(command)
