"""Test support for the telegram plugin: a Bot API stand-in and an independent init-data signer.

``BotApiStandIn`` is an aiohttp server speaking the Telegram Bot API's JSON
as published (https://core.telegram.org/bots/api): ``POST /bot<token>/<method>``
with a JSON body, answers ``{"ok": true, "result": ...}`` or ``{"ok": false,
"error_code", "description"}``. It judges what the gateway sends: the token
in the path, the content type, the types and limits of every field it
uses (``chat_id`` an integer of a chat that talked to the bot, ``text``
1-4096 characters, inline keyboards of buttons with exactly one action and
https-only Web App URLs, an https webhook URL and a well-formed
``secret_token``), and ``getUpdates`` refuses to run while a webhook is set
(409), as Telegram does.

``sign_init_data`` builds ``Telegram.WebApp.initData`` the way Telegram
documents it, written here from the published description and not from
the plugin's code. The last section holds the steps the telegram tests share
(the stand-in fixture, linking a chat, opening a mini-app session, TOTP).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from decimal import Decimal
from typing import Any
from urllib.parse import quote, urlencode

import pyotp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from orbchain.core.ledger import book as ledger
from orbchain.plugins.telegram import bot

from orbchain.web.keys import GATEWAY

from .support import Devnet, advance_clock, api, signup

BOT_TOKEN = "7000001:AAH-test_token_for_orbchain_0123456789"
CHAT = 5550001  # the private chat the shared steps link by default
MERCHANT_PASSWORD = "s3cret-pass"  # the password orbchain.testing.signup gives
SECRET_TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


def sign_init_data(fields: dict[str, Any], bot_token: str = BOT_TOKEN) -> str:
    """A signed init data query string: ``hash`` over every other field, per Telegram's Web App docs."""
    values = {k: (json.dumps(v, separators=(",", ":")) if isinstance(v, dict) else str(v)) for k, v in fields.items()}
    check = "\n".join(f"{k}={values[k]}" for k in sorted(values))
    key = hmac.new(b"WebAppData", bot_token.encode(), hashlib.sha256).digest()
    values["hash"] = hmac.new(key, check.encode(), hashlib.sha256).hexdigest()
    return urlencode(values, quote_via=quote)


def init_data_for(user_id: int, auth_date: int, *, bot_token: str = BOT_TOKEN, query_id: str = "AAE-q1") -> str:
    return sign_init_data({"query_id": query_id, "auth_date": auth_date, "chat_type": "private",
                           "user": {"id": user_id, "first_name": "Ada", "language_code": "en"}}, bot_token)


class BotApiStandIn:
    """The Bot API for one bot; tests queue updates and read what was sent."""

    def __init__(self, token: str = BOT_TOKEN) -> None:
        self.token = token
        self.updates: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.webhook: dict[str, Any] | None = None
        self.known_chats: set[int] = set()
        self.blocked_chats: set[int] = set()
        self._next_update = 1000
        self._server: TestServer | None = None

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/bot{token}/{method}", self._handle)
        self._server = TestServer(app, host="127.0.0.1")
        await self._server.start_server()
        return str(self._server.make_url("")).rstrip("/")

    async def close(self) -> None:
        if self._server is not None:
            await self._server.close()

    # -- what a test does ---------------------------------------------------------------------

    def user_says(self, chat_id: int, text: str, chat_type: str = "private", *, first_name: str = "Ada",
                  last_name: str | None = "Lovelace", username: str | None = "ada_l") -> int:
        """Queue a message; a private chat's ``Chat`` carries its user's names as Telegram's does."""
        self._next_update += 1
        self.known_chats.add(chat_id)
        user = {"first_name": first_name, **({"last_name": last_name} if last_name else {}),
                **({"username": username} if username else {})}
        chat = {"id": chat_id, "type": chat_type, **(user if chat_type == "private" else {"title": "A group"})}
        self.updates.append({"update_id": self._next_update, "message": {
            "message_id": self._next_update, "date": 1_700_000_000, "text": text,
            "from": {"id": chat_id if chat_type == "private" else 42, "is_bot": False, **user}, "chat": chat}})
        return self._next_update

    def messages_to(self, chat_id: int) -> list[dict[str, Any]]:
        return [m for m in self.sent if m["chat_id"] == chat_id]

    # -- the API ------------------------------------------------------------------------------

    @staticmethod
    def _fail(code: int, description: str) -> web.Response:
        return web.json_response({"ok": False, "error_code": code, "description": description}, status=code)

    async def _handle(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return self._fail(401, "Unauthorized")
        if request.content_type != "application/json":
            return self._fail(400, "Bad Request: expected a JSON body")
        params = await request.json()
        if not isinstance(params, dict):
            return self._fail(400, "Bad Request: parameters must be an object")
        method = request.match_info["method"]
        self.calls.append((method, params))
        handler = {"getUpdates": self._get_updates, "sendMessage": self._send_message,
                   "setWebhook": self._set_webhook, "deleteWebhook": self._delete_webhook}.get(method)
        if handler is None:
            return self._fail(404, "Not Found: method not found")
        return handler(params)

    def _ok(self, result: Any) -> web.Response:
        return web.json_response({"ok": True, "result": result})

    def _get_updates(self, params: dict[str, Any]) -> web.Response:
        if self.webhook is not None:
            return self._fail(409, "Conflict: can't use getUpdates method while webhook is active")
        offset, timeout = params.get("offset", 0), params.get("timeout", 0)
        if not isinstance(offset, int) or isinstance(offset, bool) or not isinstance(timeout, int):
            return self._fail(400, "Bad Request: offset and timeout must be integers")
        allowed = params.get("allowed_updates", [])
        if not isinstance(allowed, list) or not all(isinstance(a, str) for a in allowed):
            return self._fail(400, "Bad Request: allowed_updates must be a list of strings")
        if offset:  # confirmed: earlier updates are gone for good
            self.updates = [u for u in self.updates if u["update_id"] >= offset]
        return self._ok(list(self.updates))

    def _check_markup(self, markup: Any) -> str | None:
        rows = markup.get("inline_keyboard") if isinstance(markup, dict) else None
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            return "reply_markup must hold inline_keyboard, an array of button rows"
        for button in (b for row in rows for b in row):
            if not isinstance(button, dict) or not isinstance(button.get("text"), str) or not button["text"]:
                return "a button needs text"
            actions = [k for k in ("url", "web_app", "callback_data") if k in button]
            if len(actions) != 1:
                return "a button needs exactly one action"
            if actions == ["web_app"] and not str(button["web_app"].get("url", "")).startswith("https://"):
                return "BUTTON_TYPE_INVALID: Web App URLs must be https"
        return None

    def _send_message(self, params: dict[str, Any]) -> web.Response:
        chat_id, text = params.get("chat_id"), params.get("text")
        if not isinstance(chat_id, int) or isinstance(chat_id, bool):
            return self._fail(400, "Bad Request: chat_id must be an integer")
        if not isinstance(text, str) or not 1 <= len(text) <= 4096:
            return self._fail(400, "Bad Request: message text is empty or too long")
        if "reply_markup" in params and (problem := self._check_markup(params["reply_markup"])):
            return self._fail(400, f"Bad Request: {problem}")
        if chat_id not in self.known_chats:
            return self._fail(400, "Bad Request: chat not found")
        if chat_id in self.blocked_chats:
            return self._fail(403, "Forbidden: bot was blocked by the user")
        self.sent.append(params)
        return self._ok({"message_id": len(self.sent), "date": 1_700_000_000, "text": text,
                         "chat": {"id": chat_id, "type": "private"}})

    def _set_webhook(self, params: dict[str, Any]) -> web.Response:
        url, secret = params.get("url"), params.get("secret_token")
        if not isinstance(url, str) or not url.startswith("https://"):
            return self._fail(400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook")
        if secret is not None and (not isinstance(secret, str) or not SECRET_TOKEN_RE.match(secret)):
            return self._fail(400, "Bad Request: secret token contains unallowed characters")
        self.webhook = {"url": url, "secret_token": secret}
        return self._ok(True)

    def _delete_webhook(self, params: dict[str, Any]) -> web.Response:
        self.webhook = None
        return self._ok(True)


# -- steps the telegram tests share --------------------------------------------------------------------


@pytest.fixture
async def standin():
    """The Bot API stand-in, serving for one test (``server.url`` its base URL)."""
    server = BotApiStandIn()
    server.url = await server.start()
    yield server
    await server.close()


def telegram_config(standin, **extra):
    return {"plugin": {"telegram": {"bot_token": BOT_TOKEN, "api_base_url": standin.url, **extra}},
            "scheduler": {"enabled": False}}


# Most journeys set 2FA up in the mini-app right after linking; the cooling-off itself (default 24 hours)
# is tested on its own in tests/test_telegram_security.py.
NO_COOLING_OFF = {"mfa_cooling_off_seconds": 0}


async def telegram_shop(make_client, make_config, standin, **extra):
    """(client, merchant, gateway): the telegram plugin on the stand-in (2FA cooling-off off unless ``extra``
    says otherwise), the scheduler off, one merchant signed up (password ``MERCHANT_PASSWORD``)."""
    client = await make_client(make_config(**telegram_config(standin, **{**NO_COOLING_OFF, **extra})))
    merchant = await signup(client, password=MERCHANT_PASSWORD)
    return client, merchant, client.app[GATEWAY]


def link_token_from_bot(standin, chat_id=CHAT) -> str:
    """The link token in the bot's last answer to ``chat_id``."""
    return re.search(r"/tg/link/start\?t=(\S+)", standin.messages_to(chat_id)[-1]["text"]).group(1)


async def start_chat(gateway, standin, chat_id=CHAT, **profile) -> str:
    """``chat_id`` sends /start to the bot (as ``profile``: first_name, last_name, username); the link token."""
    standin.user_says(chat_id, "/start", **profile)
    assert await bot.poll_updates(gateway) == 1
    return link_token_from_bot(standin, chat_id)


async def link_via_bot(client, gateway, standin, merchant, chat_id=CHAT, password=None):
    """/start in a private chat, the link from the bot's answer, confirmed by the merchant with its password."""
    token = await start_chat(gateway, standin, chat_id)
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", merchant.jwt,
                             json={"token": token, "password": password or MERCHANT_PASSWORD})
    assert status == 200, body
    return token


async def open_session(client, gateway, user_id=CHAT, totp_code=None, **kwargs):
    """A mini-app session (with the holder's 2FA on, ``totp_code`` too: every sign-in asks it, issue 42)."""
    extra = {} if totp_code is None else {"totp_code": totp_code}
    status, body = await api(client, "POST", "/tgapp/session", {},
                             json={"init_data": init_data_for(user_id, gateway.now(), **kwargs), **extra})
    assert status == 200, body
    return body["data"]


async def fund(client, merchant, gateway, amount="0.01"):
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": amount})
    assert status == 200, body
    devnet = Devnet(client)
    await devnet.pay("BTC", body["data"]["address"], amount)
    await devnet.mine(gateway.coins.require("BTC").confirmations)
    return body["data"]["track_id"]


async def enable_totp(client, gateway, mini):
    status, body = await api(client, "POST", "/tgapp/mfa/setup", mini)
    assert status == 200 and body["data"]["otpauth"].startswith("otpauth://totp/")
    secret = body["data"]["secret"]
    status, body = await api(client, "POST", "/tgapp/mfa/verify", mini, json={"code": "000000"})
    assert status == 401
    status, body = await api(client, "POST", "/tgapp/mfa/verify", mini,
                             json={"code": pyotp.TOTP(secret).at(gateway.now())})
    assert status == 200 and body["data"]["totpEnabled"] is True and len(body["data"]["recovery_codes"]) == 10
    return secret


def next_code(gateway, secret):
    advance_clock(gateway, 30)  # a code is good once: the next one belongs to the next time step
    return pyotp.TOTP(secret).at(gateway.now())


async def balance(gateway, merchant):
    units = await ledger.balance(gateway.db, ledger.merchant_available(merchant.merchant_id), "BTC")
    return Decimal(gateway.coins.require("BTC").format(units))
