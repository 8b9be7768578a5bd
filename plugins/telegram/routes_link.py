"""Linking a chat (SPEC 4.13) and the webhook that brings Telegram's updates in webhook mode.

``GET /tg/link/start?t=<token>`` only checks the token and hands it to the
dashboard in a URL fragment (never sent to a server, kept out of logs and
Referer headers); the dashboard turns it into a confirmation page that
names the chat and asks for the password (``dashboard.py``). The JSON
``/dashboard/tg/link/complete`` needs the password (or a TOTP code with
2FA on) too, then spends the token and binds the chat in one transaction
(``linking.py``). ``/dashboard/tg/unlink`` undoes a link from the dashboard's
side.
"""

from __future__ import annotations

import hmac
import json

from aiohttp import web

from ...api import (
    NotFound, Unauthorized, ValidationError, count_failure, envelope, gateway_of, html_page, principal_of, rate_class,
    read_json, render_page, requires,
)
from . import bot, link_tokens, linking, store
from .settings import settings_of

routes = web.RouteTableDef()

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


def _error_page(request: web.Request, status: int, message: str) -> web.Response:
    return render_page(request, "error.html", {"title": "Telegram link", "message": message}, status=status)


@routes.get("/tg/link/start")
@html_page
@rate_class("public_page")
async def link_start(request: web.Request) -> web.StreamResponse:
    gateway = gateway_of(request)
    if not settings_of(gateway).enabled:
        return _error_page(request, 404, "There is no Telegram bot on this gateway.")
    token = request.query.get("t", "")
    try:
        link_tokens.verify(link_tokens.key_of(gateway), token, gateway.now())
    except link_tokens.LinkTokenError as exc:
        return _error_page(request, 400, str(exc))
    if await store.is_spent(gateway, token):
        return _error_page(request, 400, "This link was already used: send /start to the bot again.")
    raise web.HTTPFound(f"/app#tg-link={token}", headers={"Cache-Control": "no-store",
                                                           "Referrer-Policy": "no-referrer"})


@routes.post("/dashboard/tg/link/complete")
@requires("jwt", scope="account:credentials")
async def link_complete(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    linking.require_enabled(gateway)
    body = await read_json(request)
    return envelope(await linking.complete_link(gateway, principal_of(request).merchant_id, body.get("token"),
                                                password=body.get("password"), totp_code=body.get("totp_code")))


@routes.get("/dashboard/tg/link/status")
@requires("jwt")
async def link_status(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    return envelope(linking.link_view(await store.link_of(gateway, principal_of(request).merchant_id)))


@routes.post("/dashboard/tg/unlink")
@requires("jwt", scope="account:credentials")
async def unlink(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    unlinked = await linking.unlink(gateway, principal_of(request).merchant_id, via=linking.DASHBOARD)
    return envelope({"ok": True, "unlinked": unlinked})


@routes.post("/tg/webhook")
@rate_class(None)  # Telegram's servers, authenticated by the secret token; failures still count per IP
async def webhook(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    settings = settings_of(gateway)
    if not settings.enabled or settings.mode != "webhook":
        raise NotFound()
    given = request.headers.get(SECRET_HEADER, "")
    if not hmac.compare_digest(given.encode(), settings.webhook_secret.encode()):
        await count_failure(request)
        raise Unauthorized("invalid secret token")
    # Read as Telegram sends it (ids as ints); a body that is not a JSON object changes nothing.
    try:
        update = json.loads(await request.read())
    except (ValueError, RecursionError):
        raise ValidationError({"body": "a JSON update is required"}) from None
    if not isinstance(update, dict):
        raise ValidationError({"body": "a JSON update is required"})
    await bot.handle_update(gateway, update)
    return envelope({"ok": True})
