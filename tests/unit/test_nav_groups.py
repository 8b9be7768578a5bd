"""The dashboard navigation's groups (issue 32 item 3): every entry lands in exactly one, unknown plugins in More."""

from __future__ import annotations

from orbchain.plugins.dashboard.nav_groups import OTHER, group_nav
from orbchain.plugins.dashboard.views import NAV


def test_the_dashboard_sections_and_known_plugins_fall_in_their_groups_in_order():
    entries = [*NAV, ("Payment links", "/app/links"), ("Swaps", "/app/swaps")]
    groups = group_nav(entries)
    assert [g.title for g in groups] == ["Overview", "Get paid", "Move money", "Developers", "Account"]
    assert dict(groups)["Get paid"] == [("Payments", "/app/payments"), ("Payment links", "/app/links")]
    assert dict(groups)["Move money"] == [("Payouts", "/app/payouts"), ("Transfers", "/app/transfers"),
                                          ("Swaps", "/app/swaps")]
    assert sorted(link for g in groups for link in g.links) == sorted(entries)


def test_an_unknown_plugin_page_is_reachable_under_more_and_empty_groups_are_left_out():
    groups = group_nav([("Home", "/app"), ("Acme", "/app/acme")])
    assert groups == [("Overview", [("Home", "/app")]), (OTHER, [("Acme", "/app/acme")])]
