"""``DashboardRedirect`` (core/types/pages.py): a plugin form may send the browser to a URL or a path, no further."""

from __future__ import annotations

import pytest

from orbchain.api import DashboardRedirect


@pytest.mark.parametrize("location", ["javascript:alert(1)", "//evil.example/x", "data:text/html,x", "", "app",
                                      "https://", "/app\r\nSet-Cookie: x=1", "ftp://files.example/x"])
def test_a_dashboard_redirect_goes_to_an_http_url_or_a_local_path_only(location):
    with pytest.raises(ValueError):
        DashboardRedirect(location)


def test_a_dashboard_redirect_takes_provider_urls_and_local_paths():
    assert DashboardRedirect("https://accounts.example/authorize?x=1").location.startswith("https://")
    assert DashboardRedirect("/app/settings").prepare is None
