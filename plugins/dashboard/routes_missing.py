"""Any address under ``/app`` that no page serves: a 404 page in the dashboard's look, not the API's JSON.

One catch-all route (GET and POST: what a browser sends). aiohttp indexes routes by their fixed prefix, so every
real page (``/app/payments``, a plugin's ``/app/links/{id}``) still wins
whatever the registration order. A path a page serves with other methods is
405 as before: the catch-all would otherwise hide it, so it checks.
"""

from __future__ import annotations

from aiohttp import web

from ...api import html_page, rate_class, resources_at
from .session import current_session
from .views import render

routes = web.RouteTableDef()
CATCH_ALL = "/app/{missing:.*}"


@routes.get(CATCH_ALL)
@routes.post(CATCH_ALL)
@rate_class("public_page")
@html_page
async def not_found(request: web.Request) -> web.StreamResponse:
    allowed = _methods_elsewhere(request)
    if allowed:
        raise web.HTTPMethodNotAllowed(request.method, allowed)
    session = await current_session(request)
    return render(request, session, "dashboard/message.html", {
        "title": "Page not found",
        "lead": "There is no dashboard page at this address. It may have moved, or the link has a typo.",
    }, status=404)


def _methods_elsewhere(request: web.Request) -> set[str]:
    """The methods another route serves at this exact path."""
    return {route.method for resource in resources_at(request.app, request.path)
            if resource.canonical != CATCH_ALL.replace(":.*", "") for route in resource}
