"""A hook's kind, declared once in its spec marker and checked against its name (issue 44).

Why: the kind decides how a hook is called (``core/contract/hook_caller.py``):
whether the first answer wins, whether a value threads through the plugins,
whether one plugin's failure is isolated from the others. Today's naming rule
(``core/contract/hookspecs.py``) already says the kind in the name; the
marker states it too, so the two can be checked against each other where the
spec is declared, and a ``decide_*`` hook cannot be declared without pluggy's
``firstresult``.

``@hookspec(kind=HookKind.DECIDE)`` sets ``firstresult=True``. A spec
declared without a kind (a third party's ``@hookspec``, or pluggy's own
marker) gets the kind its name says, so nothing written before this module
breaks; :func:`traits_of` reads the same answer for both.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable, Mapping, TypeVar, overload

import pluggy

_F = TypeVar("_F", bound=Callable[..., Any])

TRAITS_ATTR = "orbchain_hook_traits"


class HookKind(enum.Enum):
    """How the core calls a hook; ``docs/plugins.md`` ("Hook reference") says the same per kind."""

    REGISTER = "register"  # startup collection: each plugin adds to a registry (who added what is known)
    CHECK = "check"  # a veto: every plugin asked, raising refuses
    DECIDE = "decide"  # the first answer that is not None wins (pluggy's firstresult)
    FILTER = "filter"  # a value passes through every plugin in turn (its last parameter)
    EXTRA = "extra"  # every plugin may contribute; every answer is returned
    EVENT = "event"  # after the fact: a failing plugin is logged, or held while the database is away


#: The name prefix of each kind; an event's name is ``<subject>_<past participle>`` or ``<subject>_<-ing>``.
PREFIXES: Mapping[HookKind, str] = {
    HookKind.REGISTER: "register_",
    HookKind.CHECK: "check_",
    HookKind.DECIDE: "decide_",
    HookKind.FILTER: "filter_",
    HookKind.EXTRA: "extra_",
}


@dataclass(frozen=True)
class HookTraits:
    """What the caller needs to know about one hook.

    ``sync``: implementations answer synchronously, because the caller cannot
    await (startup, a check made outside the event loop); an ``async def``
    answer is refused naming the plugin. ``isolated``: a failing
    implementation is logged and the others still run (events always;
    ``extra_*`` hooks whose answers only decorate a page). ``answered_by``:
    a caller must name the plugin behind an answer (a refused decision or
    field), so the facade adds ``<hook>_answers`` (decide, extra), answers with
    their plugins. ``selective``: a caller may ask only some implementations
    (chosen by a mark on the function), so the facade adds ``<hook>_to``.
    """

    kind: HookKind
    sync: bool
    isolated: bool
    answered_by: bool = False
    selective: bool = False


def kind_of_name(name: str) -> HookKind:
    """The kind a hook's name says: its prefix, else an event."""
    for kind, prefix in PREFIXES.items():
        if name.startswith(prefix):
            return kind
    return HookKind.EVENT


def resolve_traits(name: str, kind: HookKind | None = None, *, sync: bool | None = None,
                   isolated: bool | None = None, answered_by: bool = False,
                   selective: bool = False) -> HookTraits:
    """The traits of hook ``name``, refusing a declaration its name contradicts.

    Raises ``ValueError`` naming the hook: a kind the name does not say,
    ``isolated`` on a kind whose failures must reach the caller (a decision,
    a filter or a check inside a money transaction), an event declared
    ``isolated=False``, ``answered_by`` on a kind with no answers to name,
    ``selective`` on a hook called at startup.
    """
    named = kind_of_name(name)
    if kind is not None and kind is not named:
        expected = PREFIXES.get(kind)
        said = f"'{expected}...'" if expected else "an event's name (no kind prefix)"
        raise ValueError(f"hook {name!r} is declared {kind.value!r} but its name says {named.value!r}:"
                         f" a {kind.value} hook is named {said}")
    kind = named
    if isolated is None:
        isolated = kind is HookKind.EVENT
    if isolated and kind not in (HookKind.EVENT, HookKind.EXTRA):
        raise ValueError(f"hook {name!r}: only events and extra_* hooks may isolate a failing plugin")
    if not isolated and kind is HookKind.EVENT:
        raise ValueError(f"hook {name!r}: an event always isolates a failing plugin")
    if sync is None:
        sync = kind is HookKind.REGISTER
    if not sync and kind is HookKind.REGISTER:
        raise ValueError(f"hook {name!r}: register_* hooks are called at startup, synchronously")
    if answered_by and kind not in (HookKind.DECIDE, HookKind.EXTRA):
        raise ValueError(f"hook {name!r}: only decide_* and extra_* hooks have answers to name")
    if selective and (kind is HookKind.REGISTER or sync):
        raise ValueError(f"hook {name!r}: a selective hook is awaited (register_* hooks take skip=)")
    return HookTraits(kind, sync, isolated, answered_by, selective)


def traits_of(hook: pluggy.HookCaller) -> HookTraits:
    """The declared traits of a pluggy hook, or those its name says when its spec declares none."""
    spec = hook.spec
    declared = getattr(spec.function, TRAITS_ATTR, None) if spec is not None else None
    if isinstance(declared, HookTraits):
        return declared
    return resolve_traits(hook.name)


class HookspecMarker:
    """pluggy's ``HookspecMarker`` with the hook's kind: ``@hookspec(kind=HookKind.DECIDE)``.

    Without ``kind`` the name's kind is taken, so a bare ``@hookspec`` keeps
    working. ``firstresult`` follows the kind (a decision is first-result,
    nothing else is); passing it to contradict the kind is refused.
    ``historic`` is for ``register_*`` hooks only.
    """

    def __init__(self, project_name: str) -> None:
        self.project_name = project_name
        self._pluggy = pluggy.HookspecMarker(project_name)

    @overload
    def __call__(self, function: _F, *, kind: HookKind | None = ..., sync: bool | None = ...,
                 isolated: bool | None = ..., answered_by: bool = ..., selective: bool = ...,
                 firstresult: bool | None = ..., historic: bool = ...) -> _F: ...

    @overload
    def __call__(self, function: None = ..., *, kind: HookKind | None = ..., sync: bool | None = ...,
                 isolated: bool | None = ..., answered_by: bool = ..., selective: bool = ...,
                 firstresult: bool | None = ..., historic: bool = ...) -> Callable[[_F], _F]: ...

    def __call__(self, function: _F | None = None, *, kind: HookKind | None = None, sync: bool | None = None,
                 isolated: bool | None = None, answered_by: bool = False, selective: bool = False,
                 firstresult: bool | None = None, historic: bool = False) -> _F | Callable[[_F], _F]:
        def mark(func: _F) -> _F:
            name = func.__name__
            traits = resolve_traits(name, kind, sync=sync, isolated=isolated, answered_by=answered_by,
                                    selective=selective)
            first = traits.kind is HookKind.DECIDE
            if firstresult is not None and firstresult is not first:
                raise ValueError(f"hook {name!r}: firstresult={firstresult} contradicts its kind {traits.kind.value!r}"
                                 " (a decide_* hook is first-result, no other kind is)")
            if historic and traits.kind is not HookKind.REGISTER:
                raise ValueError(f"hook {name!r}: only register_* hooks may be historic")
            setattr(func, TRAITS_ATTR, traits)
            return self._pluggy(func, firstresult=first, historic=historic)

        return mark if function is None else mark(function)
