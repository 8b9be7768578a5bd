"""``orbchain plugins``: each plugin with its distribution, version, status and hooks.

Built from the same gateway ``serve`` builds, so a plugin the gateway would
refuse (made for another Orbchain release) fails here with the same message.
``--json`` prints the list for scripts.
"""

from __future__ import annotations

import argparse
import json
import textwrap

from .support import close_chains, config_from_args
from ..infra.config import Config
from ..startup import build_gateway
from ..contract.plugin_identity import WAITING, PluginInfo, describe_plugins

WIDTH = 100


def cmd_plugins(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    gateway = build_gateway(config)
    close_chains(gateway)
    infos = describe_plugins(gateway.pm, config.plugins.blocked)
    if args.json:
        print(json.dumps([info.as_dict(config) for info in infos], indent=1))
    else:
        print("\n".join(plugin_table(infos, config)))
    return 0


def _origin(info: PluginInfo) -> str:
    if info.distribution is None:
        return "(registered directly)"
    return f"{info.distribution} {info.version or ''}".strip()


def _status(info: PluginInfo, config: Config) -> str:
    status = info.status(config)
    return f"{status}: write [plugin.{info.name}]" if status == WAITING else status


def plugin_table(infos: list[PluginInfo], config: Config) -> list[str]:
    """One line per plugin (name, distribution and version, status), then its requirement and hooks, indented."""
    rows = [(info.name, _origin(info), _status(info, config)) for info in infos]
    name_width = max([len("PLUGIN"), *(len(row[0]) for row in rows)])
    origin_width = max([len("DISTRIBUTION"), *(len(row[1]) for row in rows)])
    indent = " " * (name_width + 2)
    lines = [f"{'PLUGIN':<{name_width}}  {'DISTRIBUTION':<{origin_width}}  STATUS"]
    for info, (name, origin, status) in zip(infos, rows):
        lines.append(f"{name:<{name_width}}  {origin:<{origin_width}}  {status}")
        if info.requires is not None:
            lines.append(f"{indent}supports Orbchain {info.requires}")
        if info.hooks:
            lines.extend(textwrap.wrap(", ".join(info.hooks), WIDTH, initial_indent=f"{indent}hooks: ",
                                       subsequent_indent=f"{indent}       ", break_on_hyphens=False))
    return lines
