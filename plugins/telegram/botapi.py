"""A small client of the Telegram Bot API: ``POST <base>/bot<token>/<method>`` with a JSON body.

Every answer is ``{"ok": true, "result": ...}`` or ``{"ok": false,
"error_code": ..., "description": ..., "parameters": {"retry_after": ...}}``.
The operator configures the base URL (a self-hosted Bot API server works)
and the token, so this session is the plugin's own and not the webhook
sender's private-address-refusing one: the URL is trusted configuration,
never a merchant's input. The token is a secret and never logged.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

import aiohttp

from .settings import TelegramSettings

log = logging.getLogger("orbchain.plugins.telegram")


class BotApiError(Exception):
    """The Bot API refused (``final``: retrying will not help) or could not be reached."""

    def __init__(self, message: str, *, status: int | None = None, final: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.final = final


class BotApi:
    """One bot's API; ``close()`` at shutdown."""

    def __init__(self, settings: TelegramSettings) -> None:
        self._settings = settings
        self._session: aiohttp.ClientSession | None = None

    def _url(self, method: str) -> str:
        return f"{self._settings.api_base_url}/bot{self._settings.bot_token}/{method}"

    async def call(self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None) -> Any:
        """The ``result`` of one method; ``BotApiError`` otherwise."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        total = timeout if timeout is not None else self._settings.timeout_seconds
        try:
            async with self._session.post(self._url(method), json=dict(params or {}), allow_redirects=False,
                                          timeout=aiohttp.ClientTimeout(total=total)) as response:
                status = response.status
                answer = await response.json(content_type=None)
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            raise BotApiError(f"{method}: {type(exc).__name__}") from None
        if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
            raise BotApiError(f"{method}: HTTP {status} without a Bot API answer", status=status)
        if not answer["ok"]:
            code = answer.get("error_code")
            description = str(answer.get("description", ""))[:200]
            # 400 (bad request: chat not found ...) and 403 (bot blocked, kicked) will not change on a retry.
            raise BotApiError(f"{method}: {code} {description}", status=status, final=code in (400, 403))
        return answer.get("result")

    async def send_message(self, payload: Mapping[str, Any]) -> Any:
        return await self.call("sendMessage", payload)

    async def get_updates(self, offset: int | None) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"timeout": 0, "allowed_updates": ["message"]}
        if offset is not None:
            params["offset"] = offset
        result = await self.call("getUpdates", params)
        return [u for u in result if isinstance(u, dict)] if isinstance(result, list) else []

    async def set_webhook(self, url: str, secret: str) -> None:
        await self.call("setWebhook", {"url": url, "secret_token": secret, "allowed_updates": ["message"]})

    async def delete_webhook(self) -> None:
        await self.call("deleteWebhook", {"drop_pending_updates": False})

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
