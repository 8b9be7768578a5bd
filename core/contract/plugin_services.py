"""What a plugin may ask of the gateway's machinery without holding it (issue 44 item 4).

A plugin reached ``gateway.pm`` to see whether another plugin is loaded, and ``gateway.db_outage`` to tell a
database outage from a bug in a hook that must not raise. Both are the core's: with the plugin manager a
plugin could register, unregister or call any plugin's hooks; with the outage tracker, end an outage. These
two answers are all the built-ins needed, and tests/unit/test_plugin_gateway_internals.py keeps plugins off
the rest.
"""

from __future__ import annotations

from .gateway import PluginGateway as Gateway


def plugin_loaded(gateway: "Gateway", name: str) -> bool:
    """Whether the plugin ``name`` is loaded in this process (installed, not blocked): an optional dependency
    (the mini-app offers swaps only with the swaps plugin) asks before it imports the other plugin's code."""
    return gateway.pm.get_plugin(name) is not None


def database_away(gateway: "Gateway", exc: BaseException, where: str) -> bool:
    """For a hook or job that must not raise: True when ``exc`` is the database being away (then counted, and
    logged once per outage naming ``where``), False for anything else, which the caller logs as a failure."""
    return gateway.db_outage.absorb(exc, where)
