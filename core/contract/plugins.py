"""The plugin manager factory and helpers to call hooks.

Built-in chains and features are ordinary plugins declared in the public
``orbchain`` entry-point group of ``setup.cfg``; the core imports none of them
by name. Tests build a manager with an explicit plugin list and entry-point
loading off.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import logging
from typing import Any, Callable, Collection, Iterable, Sequence, TypeVar

import pluggy

from . import hookspecs
from .held import HeldCall
from .hook_aliases import AliasingPluginManager
from ..infra.config import ConfigError
from .registries import HookspecRegistry

ENTRY_POINT_GROUP = "orbchain"

hookimpl = pluggy.HookimplMarker("orbchain")

log = logging.getLogger(__name__)


def get_plugin_manager(
    plugins: Iterable[Any] = (),
    *,
    load_entrypoints: bool = True,
    blocked: Iterable[str] = (),
) -> pluggy.PluginManager:
    """Build a plugin manager.

    ``plugins`` are registered after the entry points (modules or objects;
    a ``(name, plugin)`` pair names one explicitly). ``blocked`` names are
    never registered, whether from an entry point or the explicit list.
    Misspelled hook implementations fail here (``check_pending``).
    """
    pm = AliasingPluginManager(ENTRY_POINT_GROUP)  # old hook names still work for one release
    pm.add_hookspecs(hookspecs)
    # Historic: each plugin declares the hooks it offers its dependants as it is registered.
    pm.hook.register_hookspecs.call_historic(kwargs={"registry": HookspecRegistry(pm)})
    for blocked_name in blocked:
        pm.set_blocked(blocked_name)
    if load_entrypoints:
        load_entry_points(pm)
    for plugin in plugins:
        name: str | None = None
        if isinstance(plugin, tuple):
            name, plugin = plugin
        name = name or getattr(plugin, "PLUGIN_NAME", None) or getattr(plugin, "__name__", None)
        if name and pm.is_blocked(name):
            continue
        if pm.is_registered(plugin):
            continue
        pm.register(plugin, name=name)
    pm.check_pending()
    return pm


def check_plugin_blocks(pm: pluggy.PluginManager, block_names: Iterable[str]) -> None:
    """Refuse a ``[plugin.<name>]`` block (from the file or ``ORBCHAIN_PLUGIN__<NAME>__*``) nobody reads.

    A block must name an installed plugin that validates its configuration
    (implements ``check_config``, where it refuses keys it does not know),
    or one the operator blocked. Otherwise a misspelt plugin name, or a
    setting for a plugin that takes none, would be silently ignored.
    """
    readers = {impl.plugin_name for impl in pm.hook.check_config.get_hookimpls()}
    installed = sorted(name for name, _ in pm.list_name_plugin())
    for name in block_names:
        if pm.is_blocked(name) or name in readers:
            continue
        if pm.get_plugin(name) is None:
            raise ConfigError(f"config block 'plugin.{name}' names no installed plugin"
                              f" (installed: {', '.join(installed)})")
        raise ConfigError(f"config block 'plugin.{name}': the {name} plugin takes no configuration")


def load_entry_points(pm: pluggy.PluginManager) -> None:
    """Register the ``orbchain`` entry points of the installed distributions.

    ``importlib.metadata.entry_points`` sees each distribution once (the one
    first on ``sys.path``, the one Python imports), unlike pluggy's loader,
    which also reads shadowed copies and would load plugins they declare.
    """
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if pm.get_plugin(entry_point.name) is not None or pm.is_blocked(entry_point.name):
            continue
        pm.register(entry_point.load(), name=entry_point.name)


KEY_KINDS_ATTR = "orbchain_key_kinds"
_F = TypeVar("_F", bound=Callable[..., Any])


def for_key_kinds(*kinds: str) -> Callable[[_F], _F]:
    """Mark an ``api_key_request_answered`` implementation as wanting requests made with these key kinds only.

    Kinds are ``KeyRequest.key_kind`` values: ``scoped``, ``merchant_key``,
    ``payout_key``, ``general_key``. Requests with other keys never reach
    the implementation, and when no implementation wants a request's kind
    the core builds no ``KeyRequest`` at all: a hook that only audits named
    keys costs the legacy-key hot path nothing. Put it under ``@hookimpl``.
    """
    if not kinds or not all(isinstance(kind, str) and kind for kind in kinds):
        raise ValueError("for_key_kinds needs at least one key kind")

    def mark(function: _F) -> _F:
        setattr(function, KEY_KINDS_ATTR, frozenset(kinds))
        return function

    return mark


def plugin_names(pm: pluggy.PluginManager) -> list[str]:
    return sorted(name for name, plugin in pm.list_name_plugin() if plugin is not None)


def call_collect(pm: pluggy.PluginManager, hook_name: str, registry: Any, *, skip: Collection[str] = (),
                 **kwargs: Any) -> Any:
    """Call a collection hook one plugin at a time, so the registry knows who adds what.

    Plugins named in ``skip`` are not asked (chains waiting for their configuration).
    """
    caller = getattr(pm.hook, hook_name)
    kwargs = {"registry": registry, **kwargs}
    for impl in reversed(caller.get_hookimpls()):
        if impl.plugin_name in skip:
            continue
        if hasattr(registry, "current_plugin"):
            registry.current_plugin = impl.plugin_name
        impl.function(*[kwargs[arg] for arg in impl.argnames])
    if hasattr(registry, "current_plugin"):
        registry.current_plugin = "core"
    return registry


async def call_event(pm: pluggy.PluginManager, hook_name: str, **kwargs: Any) -> None:
    """Call an event hook and await async implementations.

    A failing plugin is logged and does not stop the others: events fire
    after the money already moved, and one broken feature must not block
    the rest.
    """
    await call_event_impls(getattr(pm.hook, hook_name).get_hookimpls(), hook_name, **kwargs)


async def call_event_impls(impls: Sequence[Any], hook_name: str, **kwargs: Any) -> None:
    """``call_event`` for a chosen subset of the hook's implementations (in pluggy's order)."""
    for impl in reversed(impls):
        try:
            result = impl.function(*[kwargs[arg] for arg in impl.argnames])
            if inspect.isawaitable(result):
                await result
        except Exception as exc:  # isolate plugins from each other
            gateway = kwargs.get("gateway")
            outage = getattr(gateway, "db_outage", None)
            if outage is None or not outage.absorb(exc, f"plugin {impl.plugin_name} in hook {hook_name}"):
                log.exception("plugin %s failed in hook %s", impl.plugin_name, hook_name)
            else:  # the database was away: this implementation is called again once it is back
                assert gateway is not None, "an outage is only met through a gateway"
                gateway.held_events.hold(HeldCall(impl.plugin_name, hook_name, impl.function,
                                                  {arg: kwargs[arg] for arg in impl.argnames}))


async def call_filter(pm: pluggy.PluginManager, hook_name: str, value_name: str, value: Any, *,
                      steps: list[tuple[str, Any]] | None = None, **kwargs: Any) -> Any:
    """Call a filter hook: ``value`` passes through each plugin in turn (registration order).

    An implementation returns the transformed value, or None to pass it on
    unchanged; async implementations are awaited. Unlike events, exceptions
    propagate: filters run inside the caller's transaction, which must roll
    back rather than commit a half-shaped result. ``steps``, when given,
    receives ``(plugin name, value it returned)`` for each plugin that
    returned one, so a caller refusing the result can name who shaped it.
    """
    caller = getattr(pm.hook, hook_name)
    for impl in reversed(caller.get_hookimpls()):
        args = {**kwargs, value_name: value}
        result = impl.function(*[args[arg] for arg in impl.argnames])
        if inspect.isawaitable(result):
            result = await result
        if result is not None:
            value = result
            if steps is not None:
                steps.append((impl.plugin_name, result))
    return value


async def call_first(pm: pluggy.PluginManager, hook_name: str, **kwargs: Any) -> Any:
    """Call a first-result hook whose implementations may be async: the first non-None answer."""
    return (await call_first_answer(pm, hook_name, **kwargs))[1]


async def call_first_answer(pm: pluggy.PluginManager, hook_name: str, **kwargs: Any) -> tuple[str | None, Any]:
    """``call_first``, with the name of the plugin that answered: ``(None, None)`` when none did."""
    caller = getattr(pm.hook, hook_name)
    for impl in reversed(caller.get_hookimpls()):
        result = impl.function(*[kwargs[arg] for arg in impl.argnames])
        if inspect.isawaitable(result):
            result = await result
        if result is not None:
            return impl.plugin_name, result
    return None, None


async def call_collect_answers(pm: pluggy.PluginManager, hook_name: str, **kwargs: Any) -> list[Any]:
    """Every plugin's list answer to a hook, concatenated (async implementations awaited).

    For hooks whose answers only decorate a page (``extra_dashboard_notices``): a
    plugin that raises is logged and skipped, so one broken plugin never
    takes the page down.
    """
    answers: list[Any] = []
    for impl in reversed(getattr(pm.hook, hook_name).get_hookimpls()):
        try:
            result = impl.function(*[kwargs[arg] for arg in impl.argnames])
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:  # isolate plugins from the page; an outage is logged once, by the outage
            outage = getattr(kwargs.get("gateway"), "db_outage", None)
            if outage is None or not outage.absorb(exc, f"hook {hook_name}"):
                log.exception("plugin %s failed in hook %s", impl.plugin_name, hook_name)
            continue
        answers.extend(result or ())
    return answers
