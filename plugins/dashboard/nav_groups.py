"""The layout's navigation in a few named groups, so sixteen links read as five short lists (issue 32 item 3).

A page joins the group of its path; a plugin page this table does not know
joins "More", so a new plugin needs no change here to be reachable.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

# Group titles in display order, and the paths each one holds.
GROUPS: tuple[tuple[str, frozenset[str]], ...] = (
    ("Overview", frozenset({"/app", "/app/portfolio", "/app/analytics", "/app/activity"})),
    ("Get paid", frozenset({"/app/payments", "/app/links", "/app/subscriptions", "/app/schedules"})),
    ("Move money", frozenset({"/app/payouts", "/app/approvals", "/app/transfers", "/app/swaps"})),
    ("Developers", frozenset({"/app/keys", "/app/webhooks"})),
    ("Account", frozenset({"/app/settings", "/app/team", "/app/brands", "/app/referrals"})),
)
OTHER = "More"


class NavGroup(NamedTuple):
    title: str
    links: list[tuple[str, str]]


def group_nav(entries: Iterable[tuple[str, str]]) -> list[NavGroup]:
    """``(title, path)`` entries in their groups; each group keeps the entries' order, empty groups are left out."""
    titles = [title for title, _ in GROUPS] + [OTHER]
    grouped: dict[str, list[tuple[str, str]]] = {title: [] for title in titles}
    for title, path in entries:
        home = next((name for name, paths in GROUPS if path in paths), OTHER)
        grouped[home].append((title, path))
    return [NavGroup(title, links) for title, links in grouped.items() if links]
