"""The dashboard navigation's groups (issue 49 item 6): each entry in the group it names, unknown ones in More."""

from __future__ import annotations

from orbchain.api import NAV_GROUPS
from orbchain.plugins.dashboard.nav_groups import OTHER, NavEntry, group_nav
from orbchain.plugins.dashboard.views import NAV


def test_the_dashboard_sections_and_plugin_entries_fall_in_the_groups_they_name_in_order():
    entries = [*NAV, NavEntry("Payment links", "/app/links", "Get paid"), NavEntry("Swaps", "/app/swaps", "Money"),
               NavEntry("Team", "/app/team", "Account")]
    groups = group_nav(entries)
    assert [g.title for g in groups] == list(NAV_GROUPS) == ["Overview", "Get paid", "Money", "Developers", "Account"]
    assert dict(groups)["Get paid"] == [("Payments", "/app/payments"), ("Payment links", "/app/links")]
    assert dict(groups)["Money"] == [("Payouts", "/app/payouts"), ("Transfers", "/app/transfers"),
                                     ("Swaps", "/app/swaps")]
    assert dict(groups)["Account"] == [("Settings", "/app/settings"), ("Security", "/app/security"),
                                       ("Team", "/app/team")]
    assert sorted(link for g in groups for link in g.links) == sorted((e.title, e.path) for e in entries)


def test_a_plugin_group_of_its_own_follows_the_known_ones_and_an_entry_without_one_is_under_more():
    groups = group_nav([NavEntry("Home", "/app", "Overview"), NavEntry("Acme", "/app/acme"),
                        NavEntry("Shipping", "/app/ship", "Logistics")])
    assert groups == [("Overview", [("Home", "/app")]), ("Logistics", [("Shipping", "/app/ship")]),
                      (OTHER, [("Acme", "/app/acme")])]
