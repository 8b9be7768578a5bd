"""The ``[plugin.telegram]`` block, checked once at startup.

Without ``bot_token`` the plugin is installed but idle: the mini-app and
link routes answer 503 ``telegram_not_configured`` and no job talks to
Telegram. ``mode`` picks how updates arrive (docs/telegram.md):

* ``polling`` (default): a scheduler job calls ``getUpdates``; on
  PostgreSQL one process runs it (the job's advisory lock), which is what
  Telegram requires (two concurrent ``getUpdates`` get 409 Conflict).
* ``webhook``: at start the gateway calls ``setWebhook`` with
  ``<base_url>/tg/webhook`` and ``webhook_secret``; Telegram then POSTs
  updates there with the secret in ``X-Telegram-Bot-Api-Secret-Token``.

``mfa_cooling_off_seconds`` (default 24 hours, 0 turns it off): how long a
newly linked chat waits before it may set up 2FA from the mini-app, so a
chat linked by mistake cannot take over the account's payouts at once.

``message_retention_days`` (default 30, 7-3650): how long a sent or given-up
outbox message is kept. Its row is what makes a notification queued twice
(an event hook run again) go out once, which happens within minutes, so a
week is the least; after that the row only grows the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urlsplit

from ...api import ConfigError
from ...api import ServiceKey

PLUGIN_NAME = "telegram"
DEFAULT_API_BASE_URL = "https://api.telegram.org"
MODES = ("polling", "webhook")
DEFAULT_INIT_DATA_MAX_AGE = 3600  # seconds an init_data may be old when it opens a session
MAX_INIT_DATA_MAX_AGE = 86400
DEFAULT_POLL_SECONDS = 2
DEFAULT_TIMEOUT_SECONDS = 10
# How long after linking a chat before 2FA may be set up from the mini-app (docs/telegram.md).
DEFAULT_MFA_COOLING_OFF = 24 * 3600
MAX_MFA_COOLING_OFF = 30 * 24 * 3600
DEFAULT_MESSAGE_RETENTION_DAYS = 30
_KEYS = {"bot_token", "api_base_url", "mode", "webhook_secret", "init_data_max_age_seconds",
         "poll_interval_seconds", "timeout_seconds", "bot_username", "mfa_cooling_off_seconds",
         "message_retention_days"}
_SETTINGS = ServiceKey["TelegramSettings"]("telegram.settings")


@dataclass(frozen=True)
class TelegramSettings:
    bot_token: str = ""
    api_base_url: str = DEFAULT_API_BASE_URL
    mode: str = "polling"
    webhook_secret: str = ""
    init_data_max_age_seconds: int = DEFAULT_INIT_DATA_MAX_AGE
    poll_interval_seconds: int = DEFAULT_POLL_SECONDS
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS
    bot_username: str = ""
    mfa_cooling_off_seconds: int = DEFAULT_MFA_COOLING_OFF
    message_retention_days: int = DEFAULT_MESSAGE_RETENTION_DAYS

    @property
    def enabled(self) -> bool:
        return bool(self.bot_token)


def _fail(key: str, why: str) -> ConfigError:
    return ConfigError(f"config key 'plugin.{PLUGIN_NAME}.{key}' {why}")


def _int(block: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = block.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail(key, f"must be an integer from {low} to {high}")
    return value


def _text(block: Mapping[str, Any], key: str, default: str = "") -> str:
    value = block.get(key, default)
    if not isinstance(value, str):
        raise _fail(key, "must be a string")
    return value.strip()


def parse_settings(block: Mapping[str, Any]) -> TelegramSettings:
    """The settings of ``block``, or ``ConfigError`` naming the bad key (a typo is never ignored)."""
    unknown = sorted(set(block) - _KEYS)
    if unknown:
        raise ConfigError(f"unknown config key 'plugin.{PLUGIN_NAME}.{unknown[0]}' (known: {', '.join(sorted(_KEYS))})")
    token = _text(block, "bot_token")
    # A Bot API token is "<bot id>:<secret>"; it becomes a URL path segment, so nothing else is allowed.
    if token and not (":" in token and all(c.isalnum() or c in ":_-" for c in token) and len(token) <= 128):
        raise _fail("bot_token", "must look like 123456:ABC-DEF (the token @BotFather gave)")
    base = _text(block, "api_base_url", DEFAULT_API_BASE_URL).rstrip("/")
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise _fail("api_base_url", "must be an http(s) URL such as https://api.telegram.org")
    mode = _text(block, "mode", "polling")
    if mode not in MODES:
        raise _fail("mode", f"must be one of {', '.join(MODES)}")
    secret = _text(block, "webhook_secret")
    # Telegram allows 1-256 characters A-Z, a-z, 0-9, _ and - in secret_token.
    if secret and not (len(secret) <= 256 and all(c.isascii() and (c.isalnum() or c in "_-") for c in secret)):
        raise _fail("webhook_secret", "must be 1-256 characters of A-Z, a-z, 0-9, _ and -")
    if mode == "webhook" and token and len(secret) < 16:
        raise _fail("webhook_secret", "is required in webhook mode (at least 16 characters)")
    username = _text(block, "bot_username").lstrip("@")
    if username and not all(c.isascii() and (c.isalnum() or c == "_") for c in username):
        raise _fail("bot_username", "must be the bot's @username")
    return TelegramSettings(
        bot_token=token, api_base_url=base, mode=mode, webhook_secret=secret,
        init_data_max_age_seconds=_int(block, "init_data_max_age_seconds", DEFAULT_INIT_DATA_MAX_AGE, 60,
                                       MAX_INIT_DATA_MAX_AGE),
        poll_interval_seconds=_int(block, "poll_interval_seconds", DEFAULT_POLL_SECONDS, 1, 3600),
        timeout_seconds=_int(block, "timeout_seconds", DEFAULT_TIMEOUT_SECONDS, 1, 120),
        bot_username=username,
        mfa_cooling_off_seconds=_int(block, "mfa_cooling_off_seconds", DEFAULT_MFA_COOLING_OFF, 0,
                                     MAX_MFA_COOLING_OFF),
        message_retention_days=_int(block, "message_retention_days", DEFAULT_MESSAGE_RETENTION_DAYS, 7, 3650),
    )


def settings_of(gateway: Any) -> TelegramSettings:
    """The parsed block, cached on the gateway (parsed once, at ``check_config``)."""
    cached = gateway.services.get(_SETTINGS)
    if cached is None:
        cached = gateway.services[_SETTINGS] = parse_settings(gateway.config.plugin_config(PLUGIN_NAME))
    return cached
