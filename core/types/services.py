"""Typed keys for ``gateway.services``, the state a gateway's parts keep for its lifetime (issue 44 item 4).

Why: ``services`` was a ``dict[str, Any]``; every reader named its entry by a string and got ``Any`` back, so
mypy could not see a reader expecting another type than the writer stored, and a typo was a silent ``None``.
A :class:`ServiceKey` names an entry and its type once, next to the code that owns it (as aiohttp's ``AppKey``
does for an application's state): ``gateway.services[PRICES]`` is a ``PriceService`` to mypy.

A key stands for its name: the entry is stored under ``"prices"`` and ``ServiceKey("prices", PriceService) ==
"prices"``, so a plugin that still writes ``gateway.services["prices"]`` reaches the same entry. Plain string keys
are deprecated (docs/plugins.md, "Keeping state: gateway.services"): mypy flags them with ``--enable-error-code
deprecated`` (PEP 702); nothing warns at run time.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, overload

from typing_extensions import deprecated

T = TypeVar("T")
D = TypeVar("D")

_MISSING: Any = object()  # ``pop`` without a default raises KeyError, as a dict's does


class ServiceKey(Generic[T]):
    """The name of one ``gateway.services`` entry and the type of what it holds.

    Declare it once where the service is made (``PRICES = ServiceKey("prices", PriceService)``; for a generic
    type, ``ServiceKey[set[str]]("outbox.unsigned_warned")``) and import it wherever the entry is read. It hashes
    and compares as its name, so it finds the entry a plain string names, in any dict.
    """

    __slots__ = ("name", "value_type", "__orig_class__")

    def __init__(self, name: str, t: type[T] | None = None) -> None:
        self.name = name
        self.value_type = t

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ServiceKey):
            return self.name == other.name
        return isinstance(other, str) and self.name == other

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        kind = self.value_type.__qualname__ if isinstance(self.value_type, type) else "?"
        return f"<ServiceKey({self.name!r}, type={kind})>"


class Services(dict[str, Any]):
    """``gateway.services``: a dict whose lookups by :class:`ServiceKey` are typed; string keys still work."""

    @overload
    def __getitem__(self, key: ServiceKey[T]) -> T: ...
    @overload
    @deprecated("a string key of gateway.services is deprecated: declare a ServiceKey(name, type)")
    def __getitem__(self, key: str) -> Any: ...
    def __getitem__(self, key: ServiceKey[Any] | str) -> Any:
        return super().__getitem__(_name(key))

    @overload
    def __setitem__(self, key: ServiceKey[T], value: T) -> None: ...
    @overload
    @deprecated("a string key of gateway.services is deprecated: declare a ServiceKey(name, type)")
    def __setitem__(self, key: str, value: Any) -> None: ...
    def __setitem__(self, key: ServiceKey[Any] | str, value: Any) -> None:
        super().__setitem__(_name(key), value)

    @overload
    def get(self, key: ServiceKey[T], default: None = None) -> T | None: ...
    @overload
    def get(self, key: ServiceKey[T], default: D) -> T | D: ...
    @overload
    @deprecated("a string key of gateway.services is deprecated: declare a ServiceKey(name, type)")
    def get(self, key: str, default: Any = None) -> Any: ...
    def get(self, key: ServiceKey[Any] | str, default: Any = None) -> Any:
        return super().get(_name(key), default)

    @overload
    def setdefault(self, key: ServiceKey[T], default: T) -> T: ...
    @overload
    @deprecated("a string key of gateway.services is deprecated: declare a ServiceKey(name, type)")
    def setdefault(self, key: str, default: Any = None) -> Any: ...
    def setdefault(self, key: ServiceKey[Any] | str, default: Any = None) -> Any:
        return super().setdefault(_name(key), default)

    @overload
    def pop(self, key: ServiceKey[T]) -> T: ...
    @overload
    def pop(self, key: ServiceKey[T], default: D) -> T | D: ...
    @overload
    @deprecated("a string key of gateway.services is deprecated: declare a ServiceKey(name, type)")
    def pop(self, key: str, default: Any = ...) -> Any: ...
    def pop(self, key: ServiceKey[Any] | str, default: Any = _MISSING) -> Any:
        name = _name(key)
        return super().pop(name) if default is _MISSING else super().pop(name, default)


def _name(key: ServiceKey[Any] | str) -> str:
    """Entries are stored under their names, so a string and a key reach the same one."""
    return key.name if isinstance(key, ServiceKey) else key
