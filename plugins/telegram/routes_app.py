"""The mini-app's routes (SPEC 4.13): the page, the session, and what a signed-in user does.

Handlers are thin: ``initdata`` and ``session`` authenticate, ``wallet``
does the work. Every route but the page, the session and the QR image takes
only the mini-app JWT (``miniapp_session``).
"""

from __future__ import annotations

import secrets

import aiohttp_jinja2
from aiohttp import web

from ...api import (
    Forbidden, MAX_QR_DATA, NotFound, REQUEST_ID, SIGN_IN, Unauthorized, ValidationError, announce_security_event,
    check_sign_in_code, count_failure, envelope, gateway_of, html_page, qr_svg, rate_class, read_json,
    second_factor_due,
)
from ...api.merchant import accepted_coins, require_merchant
from . import initdata, linking, session, store, wallet
from .linking import require_enabled
from .session import Handler, caller_of, miniapp_session
from .settings import PLUGIN_NAME, settings_of

routes = web.RouteTableDef()

QR_CACHE = "public, max-age=300"  # SPEC 8: QR data cached 5 minutes
# Telegram's web client shows mini-apps in an iframe; its apps for phones and desktops use a web view.
FRAME_ANCESTORS = "https://web.telegram.org"


def _page_csp(nonce: str) -> str:
    return (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'self'; img-src 'self' data:; "
            f"connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors {FRAME_ANCESTORS}")


@routes.get("/tgapp")
@html_page
@rate_class("public_page")
async def page(request: web.Request) -> web.Response:
    nonce = secrets.token_urlsafe(16)
    response = aiohttp_jinja2.render_template(f"{PLUGIN_NAME}/tgapp.html", request, {"nonce": nonce})
    response.headers.update({
        "Content-Security-Policy": _page_csp(nonce), "Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff"})
    return response


@routes.post("/tgapp/session")
@rate_class("auth")
async def open_session(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    require_enabled(gateway)
    settings = settings_of(gateway)
    body = await read_json(request)
    try:
        user = initdata.verify(body.get("init_data"), settings.bot_token, now=gateway.now(),
                               max_age=settings.init_data_max_age_seconds)
    except initdata.InitDataError as exc:
        await count_failure(request)
        raise Unauthorized(exc.reason, code=exc.code) from None
    link = await store.link_for_chat(gateway, user.user_id)
    if link is None:
        raise Forbidden("this Telegram account is not linked: send /start to the bot", code="not_linked")
    merchant_id = link["merchant_id"]
    merchant = await require_merchant(gateway.db, merchant_id)
    if not merchant["enabled"]:
        raise Forbidden("account disabled", code="merchant_disabled")
    # With the holder's 2FA on, their code (or a recovery code) before any session, as every sign-in asks it
    # (issue 42); counted on the mini-app's own TOTP lockout, and before the init data is spent, so the client
    # that got 401 totp_required sends the same init data again with the code.
    due = await second_factor_due(gateway, merchant_id, None, merchant["email"])
    factor = None if due is None else await check_sign_in_code(gateway, due, body.get("totp_code"),
                                                                method=linking.MINIAPP, channel=linking.MINIAPP)
    # One session per init data: a copy of it (a log, a shoulder) opens nothing more.
    if not await store.spend(gateway, store.INIT_DATA, user.hash, user.auth_date + settings.init_data_max_age_seconds):
        await count_failure(request)
        raise Unauthorized("this init data was already used: open the mini-app again", code="init_data_replayed")
    token = session.issue(gateway, merchant_id, user.user_id, int(merchant["token_version"]), link["link_id"])
    await announce_security_event(gateway, merchant_id, SIGN_IN, {
        "method": linking.MINIAPP, "second_factor": factor,
        **linking.chat_details(store.profile_of_row(link), user.user_id)})
    return envelope({"token": token, "expires_in": session.SESSION_TTL, "merchant": {
        "id": merchant_id, "account_id": merchant["account_id"], "email": merchant["email"],
        "default_settlement_coin": await wallet.default_settlement_coin(gateway, merchant_id),
        "accepted_coins": accepted_coins(merchant)}})


def _for_caller(action: str, *, with_body: bool = False) -> Handler:
    """A route answering ``wallet.<action>(gateway, merchant_id[, JSON body])`` for the signed-in user.

    The session is checked before the body is read (``miniapp_session``
    wraps it), as in every mini-app route; ``action`` is looked up per call.
    """

    async def answer(request: web.Request) -> web.Response:
        gateway, merchant_id = gateway_of(request), caller_of(request).merchant_id
        if with_body:
            return envelope(await getattr(wallet, action)(gateway, merchant_id, await read_json(request)))
        return envelope(await getattr(wallet, action)(gateway, merchant_id))

    answer.__name__ = answer.__qualname__ = action
    return miniapp_session(answer)


# The signed-in user's reads and actions that take nothing but the caller (and, for writes, the JSON body);
# the payout below also passes its request id on to its webhooks (SPEC 6.1).
for _method, _path, _action, _with_body in (
    ("GET", "/tgapp/balances", "balances", False),
    ("GET", "/tgapp/payments", "recent_payments", False),
    ("GET", "/tgapp/mfa/status", "mfa_status", False),
    ("POST", "/tgapp/mfa/setup", "mfa_setup", False),
    ("POST", "/tgapp/mfa/verify", "mfa_verify", True),
    ("POST", "/tgapp/swap", "swap", True),
):
    routes.route(_method, _path)(_for_caller(_action, with_body=_with_body))


@routes.get("/tgapp/receive")
@miniapp_session
async def receive(request: web.Request) -> web.Response:
    gateway = gateway_of(request)
    return envelope(await wallet.receive(gateway, caller_of(request).merchant_id, request.query.get("coin", "")))


@routes.get("/tgapp/prices")
@miniapp_session
async def prices(request: web.Request) -> web.Response:
    return envelope(await wallet.prices(gateway_of(request)))


@routes.get("/tgapp/qr")
@rate_class("cpu")
async def qr(request: web.Request) -> web.Response:
    """The mini-app's QR images: rendered in the CPU pool, cached, and a lower per-IP limit (issue 29).

    Without a configured bot there is no mini-app to draw for, so no QR
    either: 404, before anything is rendered.
    """
    gateway = gateway_of(request)
    if not settings_of(gateway).enabled:
        raise NotFound()
    data = request.query.get("data", "")
    if not data or len(data) > MAX_QR_DATA:
        raise ValidationError({"data": f"must be 1-{MAX_QR_DATA} characters"})
    return web.Response(text=await qr_svg(gateway.cpu, data), content_type="image/svg+xml", headers={
        "Cache-Control": QR_CACHE, "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"})


@routes.post("/tgapp/payout")
@miniapp_session
async def payout(request: web.Request) -> web.Response:
    body = await read_json(request)
    return envelope(await wallet.payout(gateway_of(request), caller_of(request).merchant_id, body,
                                        request_id=request.get(REQUEST_ID)))


@routes.post("/tgapp/swap/quote")
@miniapp_session
@rate_class("read")  # SPEC 8: a swap quote counts as a read
async def swap_quote(request: web.Request) -> web.Response:
    return envelope(await wallet.swap_quote(gateway_of(request), await read_json(request)))


@routes.post("/tgapp/unlink")
@miniapp_session
async def unlink(request: web.Request) -> web.Response:
    await linking.unlink(gateway_of(request), caller_of(request).merchant_id, via=linking.MINIAPP)
    return envelope({"ok": True})
