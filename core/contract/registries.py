"""Registries that collection hooks fill (``register_coins(registry)`` ...).

Each remembers which plugin added what, so a name registered twice fails at
startup with an error naming both plugins instead of one silently winning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, TypeVar

from aiohttp import web

from ..types.registry import Registry, StartupError  # the base moved to the ground floor; its names stay here

if TYPE_CHECKING:  # pragma: no cover - typing only
    from types import ModuleType

    import pluggy

T = TypeVar("T")


class ChainRegistry(Registry[Any]):
    kind = "chain"


class PriceSourceRegistry(Registry[Any]):
    kind = "price source"


@dataclass(frozen=True)
class Job:
    """A periodic job: ``await func(gateway)`` every ``seconds``.

    ``signs``: the job signs with the seed's keys (a sweep). A seedless ``serve`` (``[signer] url``) does not run
    it; ``orbchain signer``, which holds the keys, does (docs/plugins.md ``register_jobs``).
    """

    name: str
    func: Callable[[Any], Awaitable[object]]  # what it returns is not used
    seconds: float
    signs: bool = False


class JobRegistry(Registry[Job]):
    kind = "job"

    def add(self, name: str | Job, func: Callable[[Any], Awaitable[object]] | None = None, *,
            seconds: float = 60, signs: bool = False) -> Job:
        if isinstance(name, Job):
            job = name
        elif func is None:
            raise StartupError(f"plugin {self.current_plugin!r} registered job {name!r} without a function")
        else:
            job = Job(name, func, seconds, signs)
        if job.seconds <= 0:
            raise StartupError(f"job {job.name!r} needs a positive interval")
        return super().add(job)


class RouteRegistry(Registry[web.RouteTableDef]):
    """Route tables; a (method, path) pair added twice fails startup."""

    kind = "route"

    def __init__(self) -> None:
        super().__init__()
        self._tables: list[web.RouteTableDef] = []

    def add(self, routes: web.RouteTableDef) -> web.RouteTableDef:
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

    def add(self, name: str | Command, help: str = "", configure: Callable[[Any], None] | None = None) -> Command:
        if isinstance(name, Command):
            command = name
        elif configure is None:
            raise StartupError(f"plugin {self.current_plugin!r} registered command {name!r} without configure")
        else:
            command = Command(name, help, configure)
        return super().add(command)


# -----------------------------------------------------------------------------
# What feature plugins contribute (scopes, event kinds, pages, API documentation,
# templates, payment fields). The web layer and the core read these; a blocked
# plugin never registers, so its contributions vanish with no other change.
# -----------------------------------------------------------------------------

_SCOPE = re.compile(r"^[a-z][a-z0-9_]*:[a-z][a-z0-9_]*$")
_EVENT_KIND = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
_SLOT = re.compile(r"^[a-z][a-z0-9-]*$")
_PLUGIN_NAMESPACE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class Described:
    """A name a plugin declares, with what it means."""

    name: str
    description: str = ""


@dataclass(frozen=True)
class Scope(Described):
    """An API-key scope (``payment:create``); ``@requires(..., scope=name)`` routes check it.

    ``legacy_keys`` names the legacy keys (``merchant``, ``payout``,
    ``general``) that hold the scope too, for a plugin route the SPEC puts
    under one of the three keys (the subscriptions API: the merchant key).
    """

    legacy_keys: tuple[str, ...] = ()
    members_only: bool = False  # a dashboard member's permission (team:manage), never an API key's


class EventKind(Described):
    """A webhook event type (``subscription.paid``) a plugin may enqueue."""


N = TypeVar("N", bound=Described)


class _NamedRegistry(Registry[N]):
    """Names a plugin declares with a description, each checked against one pattern."""

    item_type: type[N]
    pattern: re.Pattern[str]
    expected: str

    def add(self, name: str | N, description: str = "") -> N:
        item = self.item_type(name, description) if isinstance(name, str) else name
        if not isinstance(item.name, str) or not self.pattern.match(item.name):
            raise StartupError(f"plugin {self.current_plugin!r} registered a malformed {self.kind} {item.name!r}"
                               f" (expected {self.expected})")
        return super().add(item)


LEGACY_KEY_KINDS = ("merchant", "payout", "general")


class ScopeRegistry(_NamedRegistry[Scope]):
    kind, item_type, pattern, expected = "scope", Scope, _SCOPE, "'resource:action', lower case"
    _legacy_grants: dict[str, frozenset[str]] | None = None

    def add(self, name: str | Scope, description: str = "", *, legacy_keys: tuple[str, ...] = (),
            members_only: bool = False) -> Scope:
        item = Scope(name, description, tuple(legacy_keys), members_only) if isinstance(name, str) else name
        unknown = [k for k in item.legacy_keys if k not in LEGACY_KEY_KINDS]
        if unknown:
            raise StartupError(f"plugin {self.current_plugin!r} gave scope {item.name!r} to unknown legacy key(s)"
                               f" {unknown} (expected some of {', '.join(LEGACY_KEY_KINDS)})")
        self._legacy_grants = None
        return super().add(item)

    def names(self) -> list[str]:
        """The scopes an API key may hold (what key creation offers and the API documents)."""
        return [scope.name for scope in self if not scope.members_only]

    def all_names(self) -> list[str]:
        """Every scope, the members-only ones (dashboard permissions) too: what a route may require."""
        return [scope.name for scope in self]

    def legacy_grants(self, key_kind: str) -> frozenset[str]:
        """The registered scopes a legacy key of ``key_kind`` holds beyond the core's own (cached)."""
        grants = self._legacy_grants
        if grants is None:
            grants = {kind: frozenset(s.name for s in self if kind in s.legacy_keys) for kind in LEGACY_KEY_KINDS}
            self._legacy_grants = grants
        return grants.get(key_kind, frozenset())


class EventKindRegistry(_NamedRegistry[EventKind]):
    kind, item_type = "event kind", EventKind
    pattern, expected = _EVENT_KIND, "dotted lower case, e.g. 'subscription.paid'"


@dataclass(frozen=True)
class DashboardPage:
    """One entry of a named dashboard slot (a navigation link, a settings tab ...).

    With ``render`` the dashboard serves the page itself at ``path`` (under
    ``/app/``), signed in and inside its layout: ``render(gateway,
    merchant_id, query)`` returns an ``orbchain.core.types.pages.DashboardView``
    (may be async). With ``submit`` too, forms posted to ``path`` (CSRF
    checked by the dashboard) reach ``submit(gateway, merchant_id, form)``,
    which returns None (back to the page) or a ``DashboardView`` to show.
    Either callback may also take a ``principal`` keyword: who is signed in
    (``orbchain.api.Principal``: the holder, or a team member and their scopes).
    ``scope``: what a team member needs to see the entry and use the page
    (forms without one need ``settings:manage``); the holder needs nothing.
    ``notices``: code -> sentence the page shows when opened with
    ``?notice=<code>`` (a ``submit`` answers ``DashboardRedirect(f"{path}?notice=<code>")``
    to say what it did: "Approved." rather than a bare "Saved."); never text from the URL.
    ``group``: for a ``header-nav`` entry, the navigation group it joins (one of
    :data:`NAV_GROUPS`, or a new title of its own, shown after them); empty
    joins "More". For a ``settings-nav`` entry, the settings section it is
    listed in (Business, Payments, Webhooks, Security, Team).
    """

    slot: str
    title: str
    path: str
    plugin: str = ""
    order: int = 100
    render: Callable[..., Any] | None = None
    submit: Callable[..., Any] | None = None
    scope: str | None = None
    notices: Mapping[str, str] = field(default_factory=dict)
    group: str = ""


# The main navigation's groups in display order (issue 49 item 6): a header-nav entry names one as its ``group``.
NAV_GROUPS = ("Overview", "Get paid", "Money", "Developers", "Account")


class DashboardRegistry(Registry[DashboardPage]):
    """Entries of named UI slots; ``entries(slot)`` is what a dashboard renders."""

    kind = "dashboard page"

    def _key(self, item: DashboardPage) -> str:
        return f"{item.slot} {item.path}"

    def add(self, slot: str | DashboardPage, title: str = "", path: str = "", *, order: int = 100,
            render: Callable[..., Any] | None = None, submit: Callable[..., Any] | None = None,
            scope: str | None = None, notices: Mapping[str, str] | None = None, group: str = "") -> DashboardPage:
        page = slot if isinstance(slot, DashboardPage) else DashboardPage(
            slot, title, path, order=order, render=render, submit=submit, scope=scope, notices=dict(notices or {}),
            group=group)
        if not isinstance(page.group, str) or len(page.group) > 40:
            raise StartupError(f"plugin {self.current_plugin!r} registered dashboard page {page.path!r} with a"
                               f" malformed navigation group {page.group!r}")
        if not isinstance(page.slot, str) or not _SLOT.match(page.slot):
            raise StartupError(f"plugin {self.current_plugin!r} registered a malformed dashboard slot {page.slot!r}")
        if not page.title or not isinstance(page.path, str) or not page.path.startswith("/"):
            raise StartupError(f"plugin {self.current_plugin!r} registered a dashboard page without a title"
                               f" or an absolute path: {page!r}")
        if page.submit is not None and page.render is None:
            raise StartupError(f"plugin {self.current_plugin!r} registered dashboard page {page.path!r} with a submit"
                               " callback but no render callback")
        if page.render is not None and not page.path.startswith("/app/"):
            raise StartupError(f"plugin {self.current_plugin!r} registered dashboard page {page.path!r}: a page the"
                               " dashboard renders lives under /app/")
        page = replace(page, plugin=self.current_plugin)
        return super().add(page)

    def rendered(self) -> list[DashboardPage]:
        """Entries the dashboard serves itself (those with ``render``), each path once."""
        seen: dict[str, DashboardPage] = {}
        for page in self:
            if page.render is not None:
                seen.setdefault(page.path, page)
        return list(seen.values())

    def entries(self, slot: str) -> list[DashboardPage]:
        """The entries of ``slot`` in display order (``order``, then title)."""
        return sorted((p for p in self if p.slot == slot), key=lambda p: (p.order, p.title))

    def slots(self) -> list[str]:
        return sorted({p.slot for p in self})


@dataclass(frozen=True)
class PluginAssets:
    """A plugin's template folder (names ``<plugin>/page.html``) and static folder (``/static/<plugin>/``)."""

    name: str
    templates: Path | None = None
    static: Path | None = None


class AssetRegistry(Registry[PluginAssets]):
    kind = "asset folder"

    # override: plugins name their folders; the PluginAssets item is built here, never passed in.
    def add(self, templates: str | Path | None = None,  # type: ignore[override]
            static: str | Path | None = None) -> PluginAssets:
        name = self.current_plugin
        if not _PLUGIN_NAMESPACE.match(name) or name == "core":
            raise StartupError(f"plugin {name!r} cannot own an asset namespace")
        assets = PluginAssets(name, _folder(name, templates), _folder(name, static))
        return super().add(assets)


def _folder(plugin: str, path: str | Path | None) -> Path | None:
    if path is None:
        return None
    folder = Path(path).resolve()
    if not folder.is_dir():
        raise StartupError(f"plugin {plugin!r} registered a missing folder {str(path)!r}")
    return folder


class OperationRegistry(Registry[Any]):
    """Plugins' OpenAPI operations (``orbchain.web.openapi.Op``) and component schemas."""

    kind = "API operation"

    def __init__(self) -> None:
        super().__init__()
        self._schemas: dict[str, Any] = {}
        self._security_schemes: dict[str, Any] = {}

    def _key(self, item: Any) -> str:
        return f"{item.method.upper()} {item.path}"

    def add_security_scheme(self, name: str, scheme: Any) -> None:
        """A credential a plugin checks itself (components/securitySchemes); name it in an operation's
        ``security`` with ``Op(..., extensions={"security": [{name: []}]})``."""
        if name in self._security_schemes:
            raise StartupError(f"duplicate API security scheme {name!r} (plugin {self.current_plugin!r})")
        self._security_schemes[name] = scheme

    def security_schemes(self) -> dict[str, Any]:
        return dict(self._security_schemes)

    def add_schema(self, name: str, schema: Any) -> None:
        if name in self._schemas:
            raise StartupError(f"duplicate API schema {name!r} (plugin {self.current_plugin!r})")
        self._schemas[name] = schema

    def schemas(self) -> dict[str, Any]:
        return dict(self._schemas)


@dataclass(frozen=True)
class PaymentField:
    """An extra field of the payment create bodies, handled by a plugin (``splits``).

    ``parse(gateway, value, payment_type, merchant_id)`` returns the cleaned
    value or raises ``orbchain.core.types.errors.ValidationError``;
    ``store(gateway, payment, value)`` is awaited inside the transaction that
    creates the payment, with the :class:`orbchain.core.types.views.PaymentView`.
    ``excludes`` maps another create-body field to the error code of a 400
    when both are sent (``{"settlement_coin": "splits_settlement_coin_exclusive"}``);
    it is checked whether or not a plugin serves the other field.
    """

    name: str
    parse: Callable[..., Any]
    store: Callable[..., Awaitable[None]]
    excludes: Mapping[str, str] = field(default_factory=dict)


class PaymentFieldRegistry(Registry[PaymentField]):
    kind = "payment field"

    def add(self, name: str | PaymentField, parse: Callable[..., Any] | None = None,
            store: Callable[..., Awaitable[None]] | None = None,
            excludes: Mapping[str, str] | None = None) -> PaymentField:
        # A missing parse or store (None) is refused just below, with the plugin's name.
        entry = name if isinstance(name, PaymentField) else PaymentField(
            name, parse, store, dict(excludes or {}))  # type: ignore[arg-type]
        if not callable(entry.parse) or not callable(entry.store):
            raise StartupError(f"plugin {self.current_plugin!r} registered payment field {entry.name!r}"
                               " without parse and store callables")
        return super().add(entry)


class HookspecRegistry:
    """Where plugins declare the hooks they offer their own dependants (``register_hookspecs``).

    ``add(namespace)`` hands a module (or class) of ``@hookspec`` functions to
    the plugin manager, which checks every implementation of them, those
    registered already included: a plugin loaded before the one declaring its
    hook is checked then. Declaring a hook twice stops the start.
    """

    def __init__(self, pm: "pluggy.PluginManager") -> None:
        self._pm = pm

    def add(self, namespace: "ModuleType | type") -> None:
        try:
            self._pm.add_hookspecs(namespace)
        except ValueError as exc:  # pluggy's "already registered" or "no hooks found"
            raise StartupError(f"cannot declare the hooks of {getattr(namespace, '__name__', namespace)}: {exc}"
                               ) from None
