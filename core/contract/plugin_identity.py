"""Who each plugin is, what it supports, and whether it waits for configuration.

A plugin declares itself with module (or object) attributes, as it already
names itself with ``PLUGIN_NAME``:

* ``ORBCHAIN_REQUIRES = ">=0.9,<2"``: the Orbchain releases it supports (a
  PEP 440 specifier set). The gateway refuses to start on any other release,
  naming the plugin, its requirement and the running version.
* ``ORBCHAIN_NEEDS_CONFIG = True``: its chains talk to something only the
  operator can name (a node URL). Until the operator writes its
  ``[plugin.<name>]`` block the core does not ask it for chain adapters, so an
  installed but unconfigured plugin never makes ``/ready`` wait on a node that
  is not there. Its coins and address families still register: in
  development the devnet simulates them, as it does the built-in chains' coins.

The distribution and version come from the ``orbchain`` entry point a plugin
was installed under; ``orbchain plugins`` shows all of it.
"""

from __future__ import annotations

import importlib.metadata
import logging
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

import pluggy
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from ... import __version__
from ..types.registry import StartupError

if TYPE_CHECKING:  # pragma: no cover
    from ..infra.config import Config

REQUIRES_ATTR = "ORBCHAIN_REQUIRES"
NEEDS_CONFIG_ATTR = "ORBCHAIN_NEEDS_CONFIG"

ACTIVE = "active"
WAITING = "off until configured"
BLOCKED = "blocked"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PluginInfo:
    """One plugin as ``orbchain plugins`` shows it (``hooks`` empty for a blocked plugin: it is never loaded)."""

    name: str
    distribution: str | None
    version: str | None
    requires: str | None
    needs_config: bool
    hooks: tuple[str, ...]
    blocked: bool = False

    def status(self, config: "Config") -> str:
        if self.blocked:
            return BLOCKED
        return WAITING if self.needs_config and self.name not in config.plugin else ACTIVE

    def as_dict(self, config: "Config") -> dict[str, Any]:
        return {"name": self.name, "distribution": self.distribution, "version": self.version,
                "requires_orbchain": self.requires, "needs_config": self.needs_config,
                "status": self.status(config), "hooks": list(self.hooks)}


def _entry_points(pm: pluggy.PluginManager) -> dict[str, importlib.metadata.EntryPoint]:
    """The ``orbchain`` entry points Python sees, by name (the first of each, as ``load_entry_points`` takes)."""
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for entry_point in importlib.metadata.entry_points(group=pm.project_name):
        found.setdefault(entry_point.name, entry_point)
    return found


def _loaded_from(entry_point: importlib.metadata.EntryPoint, plugin: object) -> bool:
    """Whether ``plugin`` is what the entry point names (already imported; nothing is loaded here)."""
    target: object = sys.modules.get(entry_point.module)
    for part in (entry_point.attr or "").split(".") if entry_point.attr else ():
        target = getattr(target, part, None)
    return target is not None and target is plugin


def _distribution(entry_point: importlib.metadata.EntryPoint | None) -> tuple[str | None, str | None]:
    dist = getattr(entry_point, "dist", None)
    return (dist.name, dist.version) if dist is not None else (None, None)


def requirement_of(plugin: object) -> str | None:
    value = getattr(plugin, REQUIRES_ATTR, None)
    return None if value is None else str(value)


def needs_config(plugin: object) -> bool:
    return getattr(plugin, NEEDS_CONFIG_ATTR, False) is True


def describe_plugins(pm: pluggy.PluginManager, blocked: Iterable[str] = ()) -> list[PluginInfo]:
    """Every registered plugin, and every ``blocked`` one installed as an entry point, by name."""
    entry_points = _entry_points(pm)
    infos = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:
            continue
        entry_point = entry_points.get(name)
        dist, version = _distribution(entry_point if entry_point and _loaded_from(entry_point, plugin) else None)
        hooks = tuple(sorted(caller.name for caller in pm.get_hookcallers(plugin) or ()))
        infos.append(PluginInfo(name, dist, version, requirement_of(plugin), needs_config(plugin), hooks))
    registered = {info.name for info in infos}
    for name in sorted(set(blocked) - registered):
        if name in entry_points:
            dist, version = _distribution(entry_points[name])
            infos.append(PluginInfo(name, dist, version, None, False, (), blocked=True))
    return sorted(infos, key=lambda info: info.name)


def check_declarations(pm: pluggy.PluginManager, running: str = __version__) -> None:
    """Refuse to start with a plugin made for another Orbchain, or one that cannot be configured.

    Every refusal is named in one error, so an upgrade that strands three
    plugins says so once.
    """
    problems = [problem for name, plugin in pm.list_name_plugin() if plugin is not None
                for problem in _problems(pm, name, plugin, running)]
    if problems:
        raise StartupError("; ".join(problems))


def _problems(pm: pluggy.PluginManager, name: str, plugin: object, running: str) -> list[str]:
    problems = []
    requirement = requirement_of(plugin)
    if requirement is not None:
        try:
            supported = SpecifierSet(requirement)
        except InvalidSpecifier:
            problems.append(f"plugin {name!r}: {REQUIRES_ATTR} = {requirement!r} is not a version specifier"
                            " (PEP 440, e.g. '>=0.9,<2')")
        else:
            if not supported.contains(running, prereleases=True):
                problems.append(f"plugin {name!r} supports Orbchain {requirement}, this is Orbchain {running}:"
                                f" install a release of the plugin made for {running}, or block it"
                                f" ([plugins] blocked = [\"{name}\"])")
    if needs_config(plugin) and not any(impl.plugin is plugin for impl in pm.hook.check_config.get_hookimpls()):
        problems.append(f"plugin {name!r} sets {NEEDS_CONFIG_ATTR} but implements no check_config hook to read"
                        f" its [plugin.{name}] block")
    return problems


def waiting_for_config(pm: pluggy.PluginManager, config: "Config") -> frozenset[str]:
    """Plugins whose chains wait for their ``[plugin.<name>]`` block (file or ``ORBCHAIN_PLUGIN__<NAME>__*``)."""
    return frozenset(name for name, plugin in pm.list_name_plugin()
                     if plugin is not None and needs_config(plugin) and name not in config.plugin)


def hold_unconfigured(pm: pluggy.PluginManager, config: "Config") -> frozenset[str]:
    """``waiting_for_config``, each one logged: the operator sees why an installed chain does nothing."""
    waiting = waiting_for_config(pm, config)
    level = logging.INFO if config.is_development else logging.WARNING
    for name in sorted(waiting):
        log.log(level, "plugin %s is off until configured: its chains need a [plugin.%s] block (or"
                       " ORBCHAIN_PLUGIN__%s__* variables); its coins stay registered", name, name, name.upper())
    return waiting
