"""Dashboard API keys: list, create, revoke and rotate scoped keys (SPEC 4.9, 2.14).

Creating or rotating a key needs every scope of the key besides ``key:manage`` (core/accounts/key_powers.py).
"""

from __future__ import annotations

from typing import Sequence

from aiohttp import web

from ...core.accounts import api_keys
from ..auth import principal_of, requires
from ..envelope import envelope, read_json
from ..keys import gateway_of
from ..validation import MAX_TIMESTAMP, Field, validate

routes = web.RouteTableDef()

def create_fields(scopes: Sequence[str]) -> list[Field]:
    """The create body's fields; ``scopes`` are the core's plus every plugin's (``register_scopes``)."""
    return [
        Field("label", required=True, min_len=1, max_len=80),
        Field("scopes", "list", required=True, min_len=1, max_len=len(scopes), choices=tuple(scopes)),
        *OPTIONAL_FIELDS,
    ]


OPTIONAL_FIELDS = [
    Field("coin_allowlist", "list", max_len=100, upper=True, default=[]),
    Field("ip_allowlist", "list", max_len=100, default=[]),
    Field("webhook_url", "url", max_len=500),
    Field("rate_limit_rpm", "int", minimum=1, maximum=10_000),
    Field("expires_at", "int", minimum=1, maximum=MAX_TIMESTAMP),
    Field("brand_id", max_len=64),
]


@routes.get("/dashboard/api-keys")
@requires("jwt")
async def list_keys(request: web.Request) -> web.Response:
    return envelope(await api_keys.list_api_keys(gateway_of(request).db, principal_of(request).merchant_id))


@routes.post("/dashboard/api-keys")
@requires("jwt", scope="key:manage")
async def create_key(request: web.Request) -> web.Response:
    clean = validate(await read_json(request), create_fields(gateway_of(request).scopes.names()))
    principal = principal_of(request)
    result = await api_keys.create_scoped_key(gateway_of(request), principal.merchant_id,
                                              api_keys.ScopedKeyRequest(**clean), issuer=principal.key_issuer())
    return envelope(result)


@routes.post("/dashboard/api-keys/{key_id}/revoke")
@requires("jwt", scope="key:manage")
async def revoke_key(request: web.Request) -> web.Response:
    result = await api_keys.revoke_scoped_key(gateway_of(request), principal_of(request).merchant_id,
                                              request.match_info["key_id"])
    return envelope(result)


@routes.post("/dashboard/api-keys/{key_id}/rotate")
@requires("jwt", scope="key:manage")
async def rotate_key(request: web.Request) -> web.Response:
    principal = principal_of(request)
    result = await api_keys.rotate_scoped_key(gateway_of(request), principal.merchant_id, request.match_info["key_id"],
                                              issuer=principal.key_issuer())
    return envelope(result)
