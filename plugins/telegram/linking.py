"""Linking and unlinking a chat (SPEC 4.13): one set of functions for the JSON routes and the dashboard page.

A link token in a URL proves only that the bot handed it to some chat; it
says nothing about who opened it. So nothing binds a chat until the signed-in
account holder has seen whose chat it is (the name and @username the bot
recorded at ``/start``, never anything from the URL) and confirmed with the
password, or a TOTP code when 2FA is on (``confirm_account_holder``:
counted against the account's lockouts). ``complete_link`` does that for
``POST /dashboard/tg/link/complete`` and for the plugin's dashboard page
(``dashboard.py``, ``/app/telegram``); the dashboard plugin's fragment
landing only forwards the token to that page, through the ``tg_link``
service (``LinkService.confirmation_path``), so neither plugin imports the
other. Linking and unlinking are announced as security events.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, NamedTuple
from urllib.parse import quote

from ...api import InvalidRequest, NotConfigured, ValidationError, announce_security_event, confirm_account_holder
from ...api import ServiceKey
from ...api.merchant import require_merchant
from . import bot, link_tokens, store
from .settings import settings_of

SERVICE_NAME = ServiceKey["LinkService"]("tg_link")
PAGE_PATH = "/app/telegram"
CHAT_LINKED, CHAT_UNLINKED = "chat_linked", "chat_unlinked"
DASHBOARD, MINIAPP, RELINKED = "dashboard", "miniapp", "relinked"  # where an unlink came from (``via``)
# A token as it appears in whatever was pasted: the bot's link, /app#tg-link=..., or the bare token.
_TOKEN_IN_TEXT = re.compile(r"-?[0-9]{1,20}\.[0-9]{1,12}\.[0-9a-f]{64}")


def require_enabled(gateway: Any) -> None:
    if not settings_of(gateway).enabled:
        raise NotConfigured("not configured", code="telegram_not_configured",
                            detail={"telegram": "set [plugin.telegram] bot_token to enable the bot"})


def token_in(text: Any) -> str | None:
    """The link token inside a pasted link (or the token itself), None when there is none."""
    if not isinstance(text, str) or len(text) > 8192:
        return None
    found = _TOKEN_IN_TEXT.search(text)
    return found.group(0) if found else None


class PendingLink(NamedTuple):
    """A link token checked and not yet used, and who the chat is."""

    token: link_tokens.LinkToken
    text: str
    chat: store.ChatProfile


async def pending_link(gateway: Any, token: object) -> PendingLink:
    """The chat a valid, unused token would link; 400 ``link_token_invalid``/``_expired``/``_used``,
    ``link_chat_unknown`` (no ``/start`` recorded for the chat: it cannot be named, so it is not linked)."""
    require_enabled(gateway)
    if not isinstance(token, str) or not token:
        raise ValidationError({"token": "is required: the link token from the bot"})
    try:
        link = link_tokens.verify(link_tokens.key_of(gateway), token, gateway.now())
    except link_tokens.LinkTokenError as exc:
        raise InvalidRequest(str(exc), code=exc.code) from None
    if await store.is_spent(gateway, token):
        raise InvalidRequest("this link was already used: send /start to the bot again", code="link_token_used")
    chat = await store.profile_of(gateway, link.chat_id)
    if chat is None:
        raise InvalidRequest("this chat cannot be named: send /start to the bot again", code="link_chat_unknown")
    return PendingLink(link, token, chat)


def chat_details(chat: store.ChatProfile | None, chat_id: int) -> dict[str, Any]:
    """How a security event names a chat: its id, name and @username (no secret, nothing from a URL)."""
    if chat is None:
        return {"chat_id": chat_id}
    return {"chat_id": chat_id, "chat_name": chat.name, "chat_username": chat.username}


async def complete_link(gateway: Any, merchant_id: str, token: object, *, password: Any = None,
                        totp_code: Any = None) -> dict[str, Any]:
    """Check the token, re-authenticate the account holder, then spend the token and bind its chat.

    Raises the SPEC 7 errors the route answers with (``ApiError``): a bad
    token (400), a missing password or code (400 validation), a wrong one
    (401, counted by the account's lockouts; 429 while locked). Any refusal
    binds nothing and leaves the token unspent.
    """
    pending = await pending_link(gateway, token)
    await confirm_account_holder(gateway, merchant_id, password=password, totp_code=totp_code)
    merchant = await require_merchant(gateway.db, merchant_id)
    chat_id = pending.token.chat_id
    async with gateway.db.transaction():
        if not await store.spend(gateway, store.LINK, pending.text, pending.token.expires_at):
            raise InvalidRequest("this link was already used: send /start to the bot again",
                                 code="link_token_used")
        replaced = await store.bind(gateway, merchant_id, chat_id)
        text = f"This chat is now linked to Orbchain account {merchant['account_id']}."
        await store.enqueue(gateway, f"linked:{pending.token.mac}", chat_id,
                            bot.text_message(chat_id, text, bot.open_app_markup(gateway)))
    for old in replaced:
        if (old["merchant_id"], int(old["chat_id"])) != (merchant_id, chat_id):
            await _announce_unlinked(gateway, old, RELINKED)
    await announce_security_event(gateway, merchant_id, CHAT_LINKED, chat_details(pending.chat, chat_id))
    return {"ok": True, "account_id": merchant["account_id"]}


async def unlink(gateway: Any, merchant_id: str, *, via: str) -> bool:
    """Remove the merchant's link (its mini-app sessions stop at once); False when none was linked."""
    link = await store.unbind(gateway, merchant_id)
    if link is None:
        return False
    chat_id = int(link["chat_id"])
    await store.enqueue(gateway, f"unlinked:{chat_id}:{link['link_id']}", chat_id,
                        bot.text_message(chat_id, "This chat is no longer linked to your Orbchain account."))
    await _announce_unlinked(gateway, link, via)
    return True


async def _announce_unlinked(gateway: Any, link: Mapping[str, Any], via: str) -> None:
    chat_id = int(link["chat_id"])
    await announce_security_event(gateway, link["merchant_id"], CHAT_UNLINKED,
                                  {**chat_details(store.profile_of_row(link), chat_id), "via": via})


def link_view(link: Mapping[str, Any] | None) -> dict[str, Any]:
    """``GET /dashboard/tg/link/status``: SPEC's linked, linked_at, chat_id, and who the chat is."""
    if link is None:
        return {"linked": False, "linked_at": None, "chat_id": None, "first_name": None, "last_name": None,
                "username": None}
    return {"linked": True, "linked_at": int(link["linked_at"]), "chat_id": int(link["chat_id"]),
            "first_name": link["first_name"], "last_name": link["last_name"], "username": link["username"]}


class LinkService:
    """What ``gateway.services[SERVICE_NAME]`` holds: where the dashboard sends a ``#tg-link=`` token."""

    def confirmation_path(self, token: str) -> str:
        """The page that names the chat and asks for the password before linking (it never links by itself)."""
        return f"{PAGE_PATH}?t={quote(token, safe='')}"


def offer(gateway: Any) -> None:
    """Put the service in place at startup, only when the bot is configured (else the dashboard says so)."""
    if settings_of(gateway).enabled:
        gateway.services[SERVICE_NAME] = LinkService()
    else:
        gateway.services.pop(SERVICE_NAME, None)
