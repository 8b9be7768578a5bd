"""The image origins one dashboard page draws from: the logos its brand previews show (issue 49 item 3).

The dashboard's CSP allows images from its own origin only; a brand's logo
lives on the merchant's host. Rather than a wildcard, or fetching logos
through the gateway (a request to any host a merchant names, for every
view), each page's policy names exactly the logo origins that page draws:
the template asks ``allow_image(origin)`` as it draws a logo, and the page
is served with those origins in ``img-src``. A page asking for more than
``MAX_ORIGINS`` draws the rest without their logo, so the header stays short.
"""

from __future__ import annotations

MAX_ORIGINS = 16


class ImageOrigins:
    """Collects, while one page renders, the origins its images come from (each already checked:
    ``BrandChoice.logo_origin`` is ``https://host[:port]`` of a URL that passed ``logo_url``)."""

    def __init__(self) -> None:
        self._origins: list[str] = []

    def allow(self, origin: str | None) -> bool:
        """Whether the page may draw an image from ``origin`` (now in its policy); False past the bound."""
        if not origin:
            return False
        if origin not in self._origins:
            if len(self._origins) >= MAX_ORIGINS:
                return False
            self._origins.append(origin)
        return True

    @property
    def origins(self) -> tuple[str, ...]:
        return tuple(self._origins)
