"""Hosted pages: what plugins may add to them, and what every page response carries.

Routes that serve HTML to payers mark themselves with :func:`html_page`, so
an error on them (rate limit, maintenance, a crash) renders ``error.html``
instead of the JSON envelope.
"""

from __future__ import annotations

import secrets
from typing import Any, Callable, Mapping, TypeVar

import aiohttp_jinja2
from aiohttp import web

from ..core.pages import PageBranding, PayPageForm

__all__ = ["PageBranding", "PayPageForm", "html_page", "is_html_page", "page_security_headers", "render_page"]

HTML_ATTR = "__orbchain_html__"
R = TypeVar("R", bound=web.StreamResponse)


def html_page(handler: Callable) -> Callable:
    """Mark a route as a page for people: its errors render as HTML."""
    setattr(handler, HTML_ATTR, True)
    return handler


def is_html_page(handler: object) -> bool:
    return bool(getattr(handler, HTML_ATTR, False))


def page_security_headers(response: R, nonce: str | None = None, branding: PageBranding | None = None) -> R:
    """No external resource but a brand's logo; the only script a page may run carries ``nonce``.

    A branded page (``branding``, rendered by ``base.html``) adds exactly one
    image origin, its logo's, validated by ``PageBranding``; its colour comes
    from a same-origin stylesheet, so ``style-src 'self'`` stays as it is.
    """
    scripts = f"'nonce-{nonce}'" if nonce else "'none'"
    images = "'self' data:"
    if branding is not None and branding.logo_origin:
        images += " " + branding.logo_origin
    response.headers["Content-Security-Policy"] = (
        f"default-src 'none'; style-src 'self'; img-src {images}; script-src {scripts}; "
        "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    )
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "same-origin"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def render_page(request: web.Request, template: str, context: Mapping[str, Any], *,
                status: int = 200, branding: PageBranding | None = None) -> web.Response:
    """Render a hosted page for payers (a plugin's or the core's) the one way every page is rendered.

    The template gets ``context`` plus ``nonce`` (the only inline script the
    page may run carries it) and the response the hosted pages' security
    headers. Plugin pages extend ``base.html``, so the layout's branding
    (``branding``: ask ``services.page_branding_for``) reaches them too.
    """
    nonce = secrets.token_urlsafe(16)
    response = aiohttp_jinja2.render_template(template, request, {**context, "nonce": nonce, "branding": branding},
                                              status=status)
    return page_security_headers(response, nonce, branding)
