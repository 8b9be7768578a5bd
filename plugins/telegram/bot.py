"""The bot side: updates in (polling job or webhook), messages out (the outbox job).

Updates are handled the same way however they arrive. ``/start`` in a
private chat records who the chat is (the Telegram user's first and last
name and @username, ``chat_profile``: the dashboard names the chat from
this, never from the link) and answers with a link carrying a fresh link
token; in a group it
answers that linking happens in a private chat only, because the mini-app
identifies its user by the linked chat (a private chat's id is its user's
id). Replies and notifications go through the ``telegram_messages`` outbox
(one row per logical message), delivered by ``deliver_messages`` with
retries, so neither a request nor an event hook waits on Telegram.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from typing import TYPE_CHECKING, Any, Mapping

from . import link_tokens, store
from ...api import ServiceKey
from .botapi import BotApi, BotApiError
from .settings import settings_of

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger("orbchain.plugins.telegram")

POLL_JOB, DELIVER_JOB, PRUNE_JOB = "telegram.poll", "telegram.deliver", "telegram.prune"
OFFSET = "update_offset"
_BOT = ServiceKey("telegram.bot", BotApi)
_WEBHOOK_CLEARED = ServiceKey("telegram.webhook_cleared", bool)


def bot_api(gateway: "Gateway") -> BotApi:
    """The gateway's one client of the Bot API (created on first use, closed at ``gateway_stopping``)."""
    api = gateway.services.get(_BOT)
    if api is None:
        api = gateway.services[_BOT] = BotApi(settings_of(gateway))
    return api


async def close(gateway: "Gateway") -> None:
    api = gateway.services.pop(_BOT, None)
    if api is not None:
        await api.close()


def mini_app_url(gateway: "Gateway") -> str:
    return f"{gateway.config.base_url}/tgapp"


def open_app_markup(gateway: "Gateway") -> dict[str, Any] | None:
    """A button opening the mini-app; Telegram accepts Web App buttons for https URLs only."""
    url = mini_app_url(gateway)
    if not url.startswith("https://"):
        return None
    return {"inline_keyboard": [[{"text": "Open wallet", "web_app": {"url": url}}]]}


def text_message(chat_id: int, text: str, markup: Mapping[str, Any] | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"chat_id": chat_id, "text": text, "link_preview_options": {"is_disabled": True}}
    if markup:
        payload["reply_markup"] = dict(markup)
    return payload


# -- updates in -------------------------------------------------------------------------------


def _command(text: str) -> str:
    """``/start``, ``/start@MyBot payload`` -> ``/start``; anything else -> ""."""
    if not text.startswith("/"):
        return ""
    return text.split()[0].split("@", 1)[0].lower()


MAX_NAME = 64  # Telegram's own limit for first and last names
_USERNAME = re.compile(r"^[A-Za-z0-9_]{4,32}$")


def _name(value: Any) -> str | None:
    """A name as sent, without control or format characters (no bidi overrides to disguise it), or None."""
    if not isinstance(value, str):
        return None
    text = "".join(c for c in value if unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co", "Cn"))
    text = " ".join(text.split())[:MAX_NAME]
    return text or None


def chat_profile(chat: Mapping[str, Any]) -> store.ChatProfile:
    """Who a private chat is, from Telegram's ``Chat`` object; a malformed @username is left out."""
    username = chat.get("username")
    return store.ChatProfile(chat["id"], _name(chat.get("first_name")) or "", _name(chat.get("last_name")),
                             username if isinstance(username, str) and _USERNAME.match(username) else None)


async def handle_update(gateway: "Gateway", update: Mapping[str, Any]) -> None:
    """Answer one update; idempotent by ``update_id`` (the reply's outbox key)."""
    update_id, message = update.get("update_id"), update.get("message")
    if not isinstance(update_id, int) or not isinstance(message, dict):
        return
    chat, text = message.get("chat"), message.get("text")
    if not isinstance(chat, dict) or not isinstance(chat.get("id"), int) or not isinstance(text, str):
        return
    chat_id, command = chat["id"], _command(text.strip())
    if command != "/start":
        reply = "Send /start to link this chat to your Orbchain account."
    elif chat.get("type") != "private":
        reply = "Linking happens in a private chat: open a chat with me and send /start there."
    else:
        await store.save_profile(gateway, chat_profile(chat))
        token = link_tokens.issue(link_tokens.key_of(gateway), chat_id, gateway.now())
        url = f"{gateway.config.base_url}/tg/link/start?t={token}"
        reply = ("To link this chat to your Orbchain account, open this link while signed in to your dashboard "
                 "and confirm it there (valid for 10 minutes, once). Never forward it: whoever confirms it "
                 f"gives this chat access to their account.\n{url}")
    await store.enqueue(gateway, f"update:{update_id}", chat_id, text_message(chat_id, reply))


async def poll_updates(gateway: "Gateway") -> int:
    """One ``getUpdates`` round (the polling job); the number of updates handled."""
    settings = settings_of(gateway)
    if not settings.enabled or settings.mode != "polling":
        return 0
    api = bot_api(gateway)
    try:
        if not gateway.services.get(_WEBHOOK_CLEARED):
            await api.delete_webhook()  # getUpdates answers 409 while a webhook is set
            gateway.services[_WEBHOOK_CLEARED] = True
        stored = await store.get_state(gateway, OFFSET)
        updates = await api.get_updates(int(stored) if stored else None)
    except BotApiError as exc:
        log.warning("telegram polling failed: %s", exc)
        return 0
    handled = 0
    numbered = [u for u in updates if isinstance(u.get("update_id"), int)]
    for update in sorted(numbered, key=lambda u: int(u["update_id"])):
        await handle_update(gateway, update)
        await store.set_state(gateway, OFFSET, str(update["update_id"] + 1))  # confirmed at the next call
        handled += 1
    if handled:
        await deliver_messages(gateway)
    return handled


async def register_webhook(gateway: "Gateway") -> None:
    """Webhook mode: tell Telegram where to POST updates (at start; logged, never fatal)."""
    settings = settings_of(gateway)
    if not settings.enabled or settings.mode != "webhook":
        return
    try:
        await bot_api(gateway).set_webhook(f"{gateway.config.base_url}/tg/webhook", settings.webhook_secret)
    except BotApiError as exc:
        log.error("telegram setWebhook failed: %s", exc)


# -- messages out -----------------------------------------------------------------------------


async def deliver_messages(gateway: "Gateway") -> int:
    """Send what is due in the outbox (the delivery job); the number sent."""
    if not settings_of(gateway).enabled:
        return 0
    sent = 0
    api = bot_api(gateway)
    for row in await store.due_messages(gateway):
        try:
            await api.send_message(json.loads(row["body"]))
        except BotApiError as exc:
            log.warning("telegram message %s not delivered: %s", row["id"], exc)
            await store.mark_failed(gateway, row, str(exc), final=exc.final)
            continue
        await store.mark_sent(gateway, row["id"])
        sent += 1
    return sent


async def prune(gateway: "Gateway") -> None:
    await store.prune(gateway, profile_ttl=2 * link_tokens.LINK_TOKEN_TTL)
    days = settings_of(gateway).message_retention_days
    await store.prune_messages(gateway, gateway.now() - days * 86_400)
