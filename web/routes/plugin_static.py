"""``GET /static/<plugin>/<file>``: the static folders plugins register with ``register_templates``.

Registered only when some plugin has a static folder, so a gateway without
one neither serves nor documents the route. Files are looked up inside the
plugin's own folder only (``..`` and symlinks out of it are 404) and sent
with a public cache lifetime, since plugin assets change with releases.
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from ...core.types.errors import NotFound
from ..keys import gateway_of
from ..middlewares import rate_class
from ..openapi import Op

CACHE_CONTROL = "public, max-age=3600"
PATH = "/static/{plugin}/{path}"

routes = web.RouteTableDef()

OPERATION = Op(
    "GET", PATH, "A static file of a plugin", "Hosted pages", rate_limited=False,
    responses={"200": {"description": "The file, with Cache-Control public, max-age=3600.",
                       "content": {media: {"schema": {"type": "string"}}
                                   for media in ("text/css", "text/javascript", "*/*")}}},
    description="Files from the static folder a plugin registered with register_templates.",
)


@routes.get("/static/{plugin}/{path:.+}")
@rate_class(None)
async def plugin_static(request: web.Request) -> web.StreamResponse:
    assets = gateway_of(request).assets.get(request.match_info["plugin"])
    if assets is None or assets.static is None:
        raise NotFound()
    try:
        target = (assets.static / request.match_info["path"]).resolve()
        found = _inside(target, assets.static) and target.is_file()
    except OSError:  # a name the file system refuses (longer than NAME_MAX): was a 500
        found = False
    if not found:
        raise NotFound()
    return web.FileResponse(target, headers={"Cache-Control": CACHE_CONTROL})


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents
