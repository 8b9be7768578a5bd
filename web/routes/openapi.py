"""GET /openapi.json: the OpenAPI 3.1 document of this server's routes (public, cached)."""

from __future__ import annotations

import json
from weakref import WeakKeyDictionary

from aiohttp import web

from ... import __version__
from ..keys import gateway_of
from ..middlewares import rate_class
from ..openapi import app_routes, build_document

routes = web.RouteTableDef()

# One serialised document per application: its routes and base URL never change after startup.
_CACHE: "WeakKeyDictionary[web.Application, bytes]" = WeakKeyDictionary()


def document_bytes(request: web.Request) -> bytes:
    app = request.app
    cached = _CACHE.get(app)
    if cached is None:
        gateway = gateway_of(request)
        document = build_document(app_routes(app), base_url=gateway.config.base_url, version=__version__,
                                  plugins=gateway.api_operations, scopes=gateway.scopes.names())
        cached = _CACHE[app] = json.dumps(document, separators=(",", ":")).encode("utf-8")
    return cached


@routes.get("/openapi.json")
@rate_class(None)
async def openapi_document(request: web.Request) -> web.Response:
    return web.Response(body=document_bytes(request), content_type="application/json",
                        headers={"Cache-Control": "public, max-age=300"})
