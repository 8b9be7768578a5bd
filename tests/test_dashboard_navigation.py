"""The dashboard's navigation (issue 49 item 6), over HTTP as a browser without JavaScript, on both databases.

Grouped (Overview, Get paid, Money, Developers, Account), each plugin entry in the group it names through the
contract, the current place marked with ``aria-current``, Security, Team and the tip page reachable from it.
"""

from __future__ import annotations

import re

import pytest

from orbchain.core.contract.registries import DashboardRegistry, StartupError

from .dashboard_support import Visitor

GROUP = re.compile(r'<span class="nav-group-title" id="nav-group-\d+">([^<]+)</span>\s*<ul[^>]*>(.*?)</ul>', re.S)
LINK = re.compile(r'<a href="([^"]+)"( aria-current="page")?>([^<]+)</a>')


@pytest.fixture
async def app_client(make_client, make_config):
    return await make_client(make_config(scheduler={"enabled": False}))


def navigation(page: str) -> dict[str, list[tuple[str, str, bool]]]:
    """Group title -> its links as (title, path, marked current)."""
    nav = page[page.index('<nav aria-label="Main"'):page.index("</nav>")]
    return {title: [(text, path, bool(current)) for path, current, text in LINK.findall(links)]
            for title, links in GROUP.findall(nav)}


async def test_the_navigation_is_grouped_marks_where_you_are_and_reaches_security_team_and_the_tip_page(
        app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("nav@example.com")
    groups = navigation(await visitor.get("/app/payments"))
    assert list(groups) == ["Overview", "Get paid", "Money", "Developers", "Account"]
    titles = {group: [title for title, _, _ in links] for group, links in groups.items()}
    assert titles["Get paid"][:1] == ["Payments"]
    assert {"Payment links", "Tip page", "Subscriptions"} <= set(titles["Get paid"])
    assert {"Payouts", "Transfers", "Swaps"} <= set(titles["Money"])
    assert {"Settings", "Security", "Team", "Brands"} <= set(titles["Account"])
    marked = [(title, path) for links in groups.values() for title, path, current in links if current]
    assert marked == [("Payments", "/app/payments")]
    # A page under a section marks its section; Home is marked on /app only.
    groups = navigation(await visitor.get("/app/payments/new"))
    assert [title for links in groups.values() for title, _, current in links if current] == ["Payments"]
    for path, title in (("/app/security", "Security"), ("/app/team", "Team"), ("/app/tip-page", "Tip page")):
        groups = navigation(await visitor.get(path))
        assert [t for links in groups.values() for t, _, current in links if current] == [title], path

    # The tip page's entry shows the public page's address, which serves the tip form.
    page = await visitor.get("/app/tip-page")
    tip_url = re.search(r'<a id="tip-url" href="([^"]+)"', page).group(1)
    assert re.fullmatch(r"http://[^/]+/tip/ORB-[\w-]+", tip_url), tip_url
    assert 'id="tip-qr"' in page and "<svg" in page
    response = await app_client.get(tip_url[tip_url.index("/tip/"):])
    assert response.status == 200


def test_a_navigation_group_comes_through_the_contract_and_a_malformed_one_stops_startup():
    registry = DashboardRegistry()
    registry.current_plugin = "acme"
    page = registry.add("header-nav", "Shipping", "/app/ship", group="Get paid")
    assert registry.entries("header-nav") == [page] and page.group == "Get paid"
    assert registry.add("header-nav", "Other", "/app/other").group == ""
    with pytest.raises(StartupError, match="navigation group"):
        registry.add("header-nav", "Bad", "/app/bad", group=["Money"])  # type: ignore[arg-type]
