"""The layout's navigation in a few named groups, so twenty links read as five short lists (issue 49 item 6).

Each entry names its group: the dashboard's own sections below, a plugin's
through the contract (``registry.add("header-nav", ..., group="Get paid")``).
The groups of ``orbchain.api.NAV_GROUPS`` come first in their order, a group
a plugin invents after them, and an entry naming none joins "More", so a new
plugin is reachable with no change here.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

from ...api import NAV_GROUPS

OTHER = "More"


class NavEntry(NamedTuple):
    title: str
    path: str
    group: str = ""


class NavGroup(NamedTuple):
    title: str
    links: list[tuple[str, str]]


def group_nav(entries: Iterable[NavEntry]) -> list[NavGroup]:
    """Entries in their groups; each group keeps the entries' order, empty groups are left out."""
    grouped: dict[str, list[tuple[str, str]]] = {title: [] for title in NAV_GROUPS}
    rest: list[tuple[str, str]] = []
    for entry in entries:
        if entry.group:
            grouped.setdefault(entry.group, []).append((entry.title, entry.path))
        else:
            rest.append((entry.title, entry.path))
    grouped[OTHER] = grouped.get(OTHER, []) + rest
    return [NavGroup(title, links) for title, links in grouped.items() if links]
