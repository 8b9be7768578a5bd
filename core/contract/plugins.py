"""The plugin manager factory (hooks are called through ``gateway.hooks``, core/contract/hooks.py).

Built-in chains and features are ordinary plugins declared in the public
``orbchain`` entry-point group of ``setup.cfg``; the core imports none of them
by name. Tests build a manager with an explicit plugin list and entry-point
loading off.
"""

from __future__ import annotations

import importlib.metadata
import logging
from typing import Any, Callable, Collection, Iterable, TypeVar

import pluggy

from . import hookspecs
from .hook_caller import HookCalls
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
    """Call a ``register_*`` hook by name: kept for plugins written against earlier releases.

    Goes through the typed caller (pluggy's ordering and wrappers, ``core/contract/hook_caller.py``) like
    every other hook call; new code calls ``gateway.hooks.collect_declared(hookspecs.<hook>, registry=...)``
    (a test keeps string calls out of the built-ins: tests/unit/test_no_string_hook_calls.py).
    """
    return HookCalls(pm).register(getattr(pm.hook, hook_name), skip=skip, registry=registry, **kwargs)
