"""Hooks renamed so their names say their kind, and their old names kept working for one release.

Issue 30 gave every hook a name following one rule (``register_*``,
``check_*``, ``decide_*``, ``filter_*``, ``extra_*``, past-tense events; see
``core/contract/hookspecs.py``). A plugin written against the old names must not break
on upgrade: :class:`AliasingPluginManager` registers an old-named
implementation under its new name and tells the plugin's author, once per
plugin and hook, which name to use (a ``DeprecationWarning``, which Python
hides by default outside tests, and a log line, which operators see). The
next release removes :data:`RENAMED_HOOKS` and this manager.
"""

from __future__ import annotations

import logging
import warnings
from types import MappingProxyType
from typing import Any, Mapping

import pluggy

log = logging.getLogger(__name__)

#: Old hook name -> new hook name (docs/plugins.md, "Renamed hooks").
RENAMED_HOOKS: Mapping[str, str] = MappingProxyType({
    "validate_config": "check_config",
    "payment_receive_target": "decide_receive_target",
    "payment_qr_payload": "decide_qr_payload",
    "sign_in_widget": "decide_sign_in_widget",
    "page_branding": "decide_page_branding",
    "webhook_destination": "decide_webhook_destination",
    "key_brand_allowed": "decide_key_brand_allowed",
    "deposit_credit_status": "decide_credit_status",
    "deposit_payment": "decide_deposit_payment",
    "payment_covered": "decide_payment_covered",
    "payment_held_open": "decide_payment_held_open",
    "credit_postings": "filter_credit_postings",
    "payment_webhook_fields": "extra_payment_webhook_fields",
    "pay_page_forms": "extra_pay_page_forms",
    "dashboard_notices": "extra_dashboard_notices",
    "payment_paying": "payment_detected",
    "security_event": "security_event_occurred",
    "api_key_request": "api_key_request_answered",
})

_warned: set[tuple[str, str]] = set()  # (plugin name, old hook name): told once per process


def warn_renamed(plugin_name: str, old: str, new: str) -> None:
    """Tell a plugin's author, once per plugin and hook, that ``old`` is now ``new``."""
    if (plugin_name, old) in _warned:
        return
    _warned.add((plugin_name, old))
    message = (f"plugin {plugin_name!r} implements the hook {old!r}, renamed {new!r}: rename the function;"
               f" the old name stops working in the next release")
    log.warning("%s", message)
    warnings.warn(message, DeprecationWarning, stacklevel=2)


class AliasingPluginManager(pluggy.PluginManager):
    """A plugin manager that calls an implementation of a renamed hook under the hook's new name.

    A plugin implementing both names (to support two Orbchain releases) is
    called once, through the new one.
    """

    _registering = "?"  # the name of the plugin being registered, for the warning

    def register(self, plugin: Any, name: str | None = None) -> str | None:
        previous, self._registering = self._registering, name or self.get_canonical_name(plugin)
        try:
            return super().register(plugin, name)
        finally:
            self._registering = previous

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> pluggy.HookimplOpts | None:
        opts = super().parse_hookimpl_opts(plugin, name)
        old = (opts.get("specname") or name) if opts is not None else name
        new = RENAMED_HOOKS.get(old)
        if opts is None or new is None:
            return opts
        if new in dir(plugin) and super().parse_hookimpl_opts(plugin, new) is not None:
            return None  # the new name is implemented too: it alone runs
        warn_renamed(self._registering, old, new)
        renamed = opts.copy()  # pluggy hands out the dict stored on the function: never change it
        renamed["specname"] = new
        return renamed
