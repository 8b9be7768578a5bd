"""Pages other plugins add to the dashboard (``register_dashboard_pages`` with a ``render`` callback).

The dashboard serves each such entry at its ``path``: signed in, CSRF
checked, inside the layout. A blocked plugin registers nothing, so its
navigation entry and its page (404) are gone with no other change.
"""

from __future__ import annotations

import inspect
from typing import Any

from aiohttp import web

from ...api import ApiError, DashboardPage, DashboardRedirect, DashboardView, GATEWAY
from .session import Session
from .form_errors import error_context
from .views import render, see_other, signed_in


async def _call(func: Any, *args: Any, principal: Any = None) -> Any:
    """The plugin's callback, given ``principal`` (who is signed in) when it takes that keyword."""
    extra = {"principal": principal} if "principal" in inspect.signature(func).parameters else {}
    result = func(*args, **extra)
    return await result if inspect.isawaitable(result) else result


def _show(request: web.Request, session: Session, page: DashboardPage, view: DashboardView, *,
          status: int | None = None, **refused: Any) -> web.Response:
    """The page; after a refused form, ``refused`` holds ``form_values`` (what was typed) and either
    ``errors`` (field -> sentence, shown beside each field) or ``error`` (one banner)."""
    if not isinstance(view, DashboardView):
        raise TypeError(f"dashboard page {page.path} of plugin {page.plugin!r} returned {type(view).__name__},"
                        " not a DashboardView")
    told = page.notices.get(request.query.get("notice", ""))  # the page's own words for what its form did
    return render(request, session, "dashboard/plugin_page.html", {
        **({"notice": told} if told else {}), **view.context, "view": view, "page_title": page.title,
        "page_path": page.path, **refused,
    }, status=status or view.status)


def page_routes(pages: list[DashboardPage]) -> web.RouteTableDef:
    """GET (and POST when the page takes forms) for every rendered plugin page."""
    routes = web.RouteTableDef()
    for page in pages:
        routes.get(page.path)(signed_in(_getter(page), scope=page.scope))
        if page.submit is not None:
            routes.post(page.path)(signed_in(_poster(page), scope=page.scope))
    return routes


def _getter(page: DashboardPage) -> Any:
    async def show(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
        view = await _call(page.render, request.app[GATEWAY], session.merchant_id, request.query,
                           principal=session.principal)
        return _show(request, session, page, view)

    show.__name__ = show.__qualname__ = f"plugin_page_{page.plugin}"
    return show


def _poster(page: DashboardPage) -> Any:
    async def submit(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
        gateway = request.app[GATEWAY]
        try:
            result = await _call(page.submit, gateway, session.merchant_id, form, principal=session.principal)
        except ApiError as exc:
            view = await _call(page.render, gateway, session.merchant_id, request.query,
                               principal=session.principal)
            typed = {name: value for name, value in form.items() if isinstance(value, str) and name != "csrf_token"}
            return _show(request, session, page, view, status=exc.status, form_values=typed, **error_context(exc))
        if result is None:
            raise see_other(request.path_qs, "saved")
        if isinstance(result, DashboardRedirect):
            return _sent_on(result)
        return _show(request, session, page, result)

    submit.__name__ = submit.__qualname__ = f"plugin_form_{page.plugin}"
    return submit


def _sent_on(redirect: DashboardRedirect) -> web.StreamResponse:
    """A plugin form's 303 elsewhere (an identity provider), with the cookies the plugin sets on it."""
    response = web.Response(status=303, headers={"Location": redirect.location, "Cache-Control": "no-store",
                                                 "Referrer-Policy": "no-referrer"})
    if redirect.prepare is not None:
        redirect.prepare(response)
    return response
