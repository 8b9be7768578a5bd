"""A dashboard page's logo origins: each once, in the order drawn, at most ``MAX_ORIGINS`` (issue 49 item 3)."""

from __future__ import annotations

import pytest

from orbchain.core.types.pages import BrandChoice
from orbchain.plugins.dashboard.image_origins import MAX_ORIGINS, ImageOrigins
from orbchain.web.pages import security_headers


def test_each_origin_once_and_no_more_than_the_bound():
    images = ImageOrigins()
    assert images.allow(None) is False and images.allow("") is False
    assert images.allow("https://a.example") and images.allow("https://a.example")
    for n in range(1, MAX_ORIGINS):
        assert images.allow(f"https://h{n}.example")
    assert images.allow("https://one-too-many.example") is False
    assert images.allow("https://a.example")  # one already allowed is still drawn
    assert images.origins[0] == "https://a.example" and len(images.origins) == MAX_ORIGINS


def test_the_policy_names_exactly_the_origins_given():
    choice = BrandChoice("brd_1", "Shop", logo_url="https://cdn.example.com:443/logo.png")
    assert choice.logo_origin == "https://cdn.example.com"  # the default port dropped, as PageBranding's
    policy = security_headers("n", image_origins=(choice.logo_origin,))["Content-Security-Policy"]
    assert "img-src 'self' data: https://cdn.example.com;" in policy and "*" not in policy
    assert "img-src 'self' data:;" in security_headers("n")["Content-Security-Policy"]


def test_a_logo_url_is_checked_as_a_pages():
    for bad in ("http://cdn.example.com/x.png", "javascript:alert(1)", "https://u:p@cdn.example.com/x.png",
                'https://cdn.example.com/"><script>'):
        with pytest.raises(ValueError):
            BrandChoice("brd_1", "Shop", logo_url=bad)
