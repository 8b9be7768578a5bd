"""The team over the JSON API: list the members, remove one (``team:manage``), the Team page's twins.

Removing asks what becomes of the API keys the member issued (created or last rotated): ``api_keys``
``revoke`` (the default) or ``keep``; the answer lists the keys concerned, and the activity log has
the removal and the choice (issue 42).
"""

from __future__ import annotations

from aiohttp import web

from ...api import Field, envelope, gateway_of, keys_issued_by, member_person, principal_of, read_json, requires, \
    validate
from ...api.merchant import get_merchant
from . import members
from .page import SCOPE

routes = web.RouteTableDef()
BASE = "/dashboard/team/members"


@routes.get(BASE)
@requires("jwt", scope=SCOPE)
async def listing(request: web.Request) -> web.Response:
    gateway, merchant_id = gateway_of(request), principal_of(request).merchant_id
    holder = await get_merchant(gateway.db, merchant_id)
    listed = []
    for row in await members.listing(gateway, merchant_id, holder["email"] if holder is not None else ""):
        keys = [] if row["holder"] else await keys_issued_by(gateway, merchant_id, member_person(row["id"]))
        listed.append({"id": row["id"], "email": row["email"], "role": row["role"], "holder": row["holder"],
                       "created_at": row["created_at"], "api_keys": [key["id"] for key in keys]})
    return envelope({"members": listed})


@routes.post(BASE + "/{member_id}/remove")
@requires("jwt", scope=SCOPE)
async def remove(request: web.Request) -> web.Response:
    clean = validate(await read_json(request), [Field("api_keys", choices=(members.REVOKE_KEYS, members.KEEP_KEYS),
                                                      default=members.REVOKE_KEYS)])
    principal = principal_of(request)
    keys = await members.remove(gateway_of(request), principal.merchant_id, request.match_info["member_id"],
                                principal, clean["api_keys"])
    return envelope({"removed": request.match_info["member_id"], "api_keys": clean["api_keys"],
                     "keys": [key["id"] for key in keys]})
