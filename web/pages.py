"""Hosted pages: what plugins may add to them, and what every page response carries.

Routes that serve HTML to payers mark themselves with :func:`html_page`, so
an error on them (rate limit, maintenance, a crash) renders ``error.html``
instead of the JSON envelope.
"""

from __future__ import annotations

import secrets
from functools import lru_cache
from typing import Any, Callable, Iterator, Mapping, TypeVar

import aiohttp_jinja2
from aiohttp import hdrs, web

from ..core.types.pages import PageBranding, PayPageForm

__all__ = ["PageBranding", "PayPageForm", "html_page", "is_html_page", "is_html_path", "page_security_headers",
           "render_page", "resources_at", "security_headers"]

HTML_ATTR = "__orbchain_html__"
R = TypeVar("R", bound=web.StreamResponse)
CSP = hdrs.CONTENT_SECURITY_POLICY
CACHE_CONTROL = hdrs.CACHE_CONTROL
REFERRER_POLICY = hdrs.REFERRER_POLICY
X_CONTENT_TYPE_OPTIONS = hdrs.X_CONTENT_TYPE_OPTIONS


def html_page(handler: Callable) -> Callable:
    """Mark a route as a page for people: its errors render as HTML."""
    setattr(handler, HTML_ATTR, True)
    return handler


def is_html_page(handler: object) -> bool:
    return bool(getattr(handler, HTML_ATTR, False))


def is_html_path(app: web.Application, path: str) -> bool:
    """Whether ``path`` is the address of a page for people (a route of it is an ``html_page``).

    For errors answered before any handler runs (a method the route lacks, a
    request line too long to parse): whatever reached a page's address, the
    answer is the error page, not the API's JSON. Walks the routes, so it is
    only for those error paths.
    """
    return any(is_html_page(route.handler) for resource in resources_at(app, path) for route in resource)


def resources_at(app: web.Application, path: str) -> Iterator[web.AbstractResource]:
    """The app's route resources whose path matches ``path`` exactly (static folders aside); a walk, for error
    paths only."""
    for resource in app.router.resources():
        info = resource.get_info()
        if "path" in info:
            matched = info["path"] == path
        elif "pattern" in info:
            matched = info["pattern"].fullmatch(path) is not None
        else:  # a static folder: files, not pages
            continue
        if matched:
            yield resource


@lru_cache(maxsize=256)
def _policy(branding: PageBranding | None, image_origins: tuple[str, ...] = ()) -> tuple[str, str]:
    """The CSP before and after its script source, built once per branding (pages are viewed often)."""
    images = "'self' data:"
    if branding is not None and branding.logo_origin:
        images += " " + branding.logo_origin
    for origin in image_origins:
        images += " " + origin
    return (f"default-src 'none'; style-src 'self'; img-src {images}; script-src ",
            "; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")


def security_headers(nonce: str | None = None, branding: PageBranding | None = None,
                     script_origin: str | None = None, live: bool = False,
                     image_origins: tuple[str, ...] = ()) -> dict[str, str]:
    """No external resource but a brand's logo; the only script a page may run carries ``nonce``.

    A branded page (``branding``, rendered by ``base.html``) adds exactly one
    image origin, its logo's, validated by ``PageBranding``; its colour comes
    from a same-origin stylesheet, so ``style-src 'self'`` stays as it is.
    ``script_origin`` (a form with a captcha widget, ``SignInWidget.origin``)
    lets that one provider's script, frame and requests in, on that page only.
    ``live`` lets the page's script open its own event stream (``connect-src 'self'``).
    ``image_origins`` (``https://host[:port]``, each from a checked logo URL) are the logos a dashboard page
    previews (``BrandChoice.logo_origin``): exactly those, on that page only.
    """
    before, after = _policy(branding, image_origins)
    scripts = f"'nonce-{nonce}'" if nonce else "'none'"
    connect = "'self'" if live else ""
    if script_origin:
        scripts += f" {script_origin}"
        after += f"; frame-src {script_origin}"
        connect = f"{connect} {script_origin}".strip()
    if connect:
        after += f"; connect-src {connect}"
    return {CSP: f"{before}{scripts}{after}",
            CACHE_CONTROL: "no-store", REFERRER_POLICY: "same-origin", X_CONTENT_TYPE_OPTIONS: "nosniff"}


def page_security_headers(response: R, nonce: str | None = None, branding: PageBranding | None = None,
                          script_origin: str | None = None) -> R:
    """``response`` with the hosted pages' ``security_headers``."""
    response.headers.update(security_headers(nonce, branding, script_origin))
    return response


def render_page(request: web.Request, template: str, context: Mapping[str, Any], *,
                status: int = 200, branding: PageBranding | None = None,
                script_origin: str | None = None) -> web.Response:
    """Render a hosted page for payers (a plugin's or the core's) the one way every page is rendered.

    The template gets ``context`` plus ``nonce`` (the only inline script the
    page may run carries it) and the response the hosted pages' security
    headers (``script_origin``: a captcha widget's provider, see
    ``security_headers``). Plugin pages extend ``base.html``, so the layout's branding
    (``branding``: ask ``services.page_branding_for``), ``<html lang>`` and the language links
    reach them too; their ``_()`` answers in the request's language (web/i18n.py).
    """
    nonce = secrets.token_urlsafe(16)
    response = aiohttp_jinja2.render_template(template, request, {**context, "nonce": nonce, "branding": branding},
                                              status=status)
    return page_security_headers(response, nonce, branding, script_origin)
