"""Completing a chat link (SPEC 4.13): one function for the JSON route and for the dashboard's pages.

``POST /dashboard/tg/link/complete`` calls ``complete_link``; the dashboard
plugin reaches the same function through the ``tg_link`` gateway service
(``LinkService``, put in ``gateway.services`` at startup when the bot is
configured), so neither plugin imports the other: the service name and its
one method are the seam, documented in docs/telegram.md.
"""

from __future__ import annotations

from typing import Any

from ...core import accounts
from ...core.errors import InvalidRequest, NotConfigured, ValidationError
from . import bot, link_tokens, store
from .settings import settings_of

SERVICE_NAME = "tg_link"


def require_enabled(gateway: Any) -> None:
    if not settings_of(gateway).enabled:
        raise NotConfigured("not configured", code="telegram_not_configured",
                            detail={"telegram": "set [plugin.telegram] bot_token to enable the bot"})


async def complete_link(gateway: Any, merchant_id: str, token: object) -> dict[str, Any]:
    """Spend the link token and bind its chat to the merchant in one transaction; queue the confirmation.

    Raises the SPEC 7 errors the route answers with (``ApiError``): a token
    that is missing, not ours, expired or already used changes nothing.
    """
    require_enabled(gateway)
    if not isinstance(token, str) or not token:
        raise ValidationError({"token": "is required: the link token from the bot"})
    try:
        link = link_tokens.verify(gateway.require_secrets().jwt_secret, token, gateway.now())
    except link_tokens.LinkTokenError as exc:
        raise InvalidRequest(str(exc), code=exc.code) from None
    merchant = await accounts.require_merchant(gateway.db, merchant_id)
    async with gateway.db.transaction():
        if not await store.spend(gateway, store.LINK, token, link.expires_at):
            raise InvalidRequest("this link was already used: send /start to the bot again",
                                 code="link_token_used")
        await store.bind(gateway, merchant_id, link.chat_id)
        text = f"This chat is now linked to Orbchain account {merchant['account_id']}."
        await store.enqueue(gateway, f"linked:{link.mac}", link.chat_id,
                            bot.text_message(link.chat_id, text, bot.open_app_markup(gateway)))
    return {"ok": True, "account_id": merchant["account_id"]}


class LinkService:
    """What ``gateway.services["tg_link"]`` holds: ``await complete(gateway, merchant_id, token)``."""

    async def complete(self, gateway: Any, merchant_id: str, token: object) -> dict[str, Any]:
        return await complete_link(gateway, merchant_id, token)


def offer(gateway: Any) -> None:
    """Put the service in place at startup, only when the bot is configured (else the dashboard says so)."""
    if settings_of(gateway).enabled:
        gateway.services[SERVICE_NAME] = LinkService()
    else:
        gateway.services.pop(SERVICE_NAME, None)
