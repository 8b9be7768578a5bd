"""The mini-app session: a JWT of one hour with claims ``m``, ``tg`` and ``src=tgapp`` (SPEC 5.4, 8).

It is signed with a key derived from the gateway's JWT secret for this
purpose only and carries the audience ``tgapp``, so neither kind of token
passes for the other: the dashboard decodes with its own audience (and key),
and ``authenticate`` here demands ``aud=tgapp``, ``src=tgapp`` and this
key. On every request the merchant must still be enabled, its sessions not
revoked (``tv``, the dashboard's token version: a password change ends
them) and the chat in ``tg`` still linked to it by the very link the
session was opened under (``lk``, the link's id): unlinking ends every
session at once, and linking the chat again later never revives them.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Awaitable, Callable, NamedTuple

import jwt
from aiohttp import web

from ...api import Forbidden, Unauthorized, count_failure, derived_key, gateway_of, refuse_if_blocked
from ...api.merchant import get_merchant
from . import store

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

SESSION_TTL = 3600  # SPEC 8: mini-app JWT 1 hour
AUDIENCE = SOURCE = "tgapp"
ALGORITHM = "HS256"


class MiniAppCaller(NamedTuple):
    merchant_id: str
    chat_id: int


MINIAPP: web.RequestKey[MiniAppCaller] = web.RequestKey("telegram.miniapp")  # the authenticated caller


def _key(gateway: "Gateway") -> bytes:
    return derived_key(gateway, "telegram/miniapp-session")


def issue(gateway: "Gateway", merchant_id: str, telegram_user: int, token_version: int, link_id: str) -> str:
    now = gateway.now()
    claims = {"m": merchant_id, "tg": telegram_user, "src": SOURCE, "aud": AUDIENCE, "iat": now,
              "exp": now + SESSION_TTL, "tv": token_version, "lk": link_id}
    return jwt.encode(claims, _key(gateway), algorithm=ALGORITHM)


def decode(gateway: "Gateway", token: str) -> dict[str, Any]:
    """The claims of a valid, unexpired mini-app token (gateway clock), else 401."""
    try:
        claims = jwt.decode(token, _key(gateway), algorithms=[ALGORITHM],
                            audience=AUDIENCE,
                            options={"require": ["m", "tg", "src", "exp", "iat", "aud", "lk"], "verify_exp": False,
                                     "verify_iat": False})
    except jwt.PyJWTError:
        raise Unauthorized("invalid token") from None
    exp, tg, version = claims.get("exp"), claims.get("tg"), claims.get("tv", 0)
    if (claims.get("src") != SOURCE or not isinstance(claims.get("m"), str) or not isinstance(exp, int)
            or exp <= gateway.now() or isinstance(tg, bool) or not isinstance(tg, int)
            or not isinstance(version, int) or not isinstance(claims.get("lk"), str)):
        raise Unauthorized("invalid token")
    return claims


async def caller_for(gateway: "Gateway", header: str) -> MiniAppCaller:
    """Who sends ``Authorization: Bearer <mini-app JWT>``, or 401 (403 for a disabled account)."""
    if header[:7].lower() != "bearer " or not header[7:].strip():
        raise Unauthorized("missing token")
    claims = decode(gateway, header[7:].strip())
    merchant = await get_merchant(gateway.db, claims["m"])
    if merchant is None or int(merchant["token_version"]) != claims.get("tv", 0):
        raise Unauthorized("invalid token")
    link = await store.link_for_chat(gateway, claims["tg"])
    if link is None or link["merchant_id"] != claims["m"] or link["link_id"] != claims["lk"]:
        raise Unauthorized("this chat is no longer linked", code="not_linked")
    if not merchant["enabled"]:
        raise Forbidden("account disabled", code="merchant_disabled")
    return MiniAppCaller(claims["m"], claims["tg"])


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def miniapp_session(handler: Handler) -> Handler:
    """Route decorator: only a mini-app JWT opens it (never a dashboard JWT or an API key).

    A failed authentication counts against the client IP like any other
    (``web.rate_identity.count_failure``), so guessing tokens is throttled.
    """

    @functools.wraps(handler)
    async def wrapped(request: web.Request) -> web.StreamResponse:
        refuse_if_blocked(request)
        try:
            request[MINIAPP] = await caller_for(gateway_of(request), request.headers.get("Authorization", ""))
        except Unauthorized:
            await count_failure(request)
            raise
        return await handler(request)

    return wrapped


def caller_of(request: web.Request) -> MiniAppCaller:
    return request[MINIAPP]
