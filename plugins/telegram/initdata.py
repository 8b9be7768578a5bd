"""Telegram Web App ``initData``: verified exactly as Telegram publishes it.

Telegram's "Validating data received via the Mini App": the init data is a
query string of fields; ``data_check_string`` is every received field but
``hash``, as ``key=<value>`` (values URL-decoded), sorted by key and joined
with ``\\n``; ``secret_key = HMAC_SHA256(key="WebAppData", msg=bot_token)``;
the data is from Telegram when ``hex(HMAC_SHA256(key=secret_key,
msg=data_check_string)) == hash``. The comparison is constant-time.

What this adds, and why (docs/decisions.md, "Mini-app"):

* ``auth_date`` must be within ``max_age`` seconds in the past (and at most
  ``FUTURE_SKEW`` in the future): a leaked init data opens nothing later.
* A field given twice, a missing or malformed ``hash``/``auth_date`` or
  ``user`` refuses the whole thing: there is one way to read a valid one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

FUTURE_SKEW = 60  # seconds an auth_date may be ahead of our clock
MAX_INIT_DATA = 4096  # characters; Telegram's are a few hundred


class InitDataError(ValueError):
    """The init data is not Telegram's, or no longer fresh; ``reason`` is safe to show."""

    def __init__(self, reason: str, code: str = "init_data_invalid") -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


@dataclass(frozen=True)
class WebAppUser:
    """Who opened the mini-app (the ``user`` field) and when Telegram signed it."""

    user_id: int
    auth_date: int
    first_name: str
    hash: str


def secret_key(bot_token: str) -> bytes:
    """HMAC-SHA256 of the bot token keyed with the constant "WebAppData"."""
    return hmac.new(b"WebAppData", bot_token.encode("utf-8"), hashlib.sha256).digest()


def _fields(init_data: str) -> dict[str, str]:
    try:
        pairs = parse_qsl(init_data, keep_blank_values=True, strict_parsing=True, errors="strict",
                          max_num_fields=64)
    except (ValueError, UnicodeDecodeError):
        raise InitDataError("init_data is not a query string") from None
    fields: dict[str, str] = {}
    for key, value in pairs:
        if key in fields:
            raise InitDataError(f"init_data repeats field {key}")
        fields[key] = value
    return fields


def data_check_string(fields: dict[str, str]) -> str:
    return "\n".join(f"{key}={fields[key]}" for key in sorted(fields) if key != "hash")


def verify(init_data: Any, bot_token: str, *, now: int, max_age: int) -> WebAppUser:
    """The user of a genuine, fresh init data; ``InitDataError`` otherwise."""
    if not isinstance(init_data, str) or not init_data or len(init_data) > MAX_INIT_DATA:
        raise InitDataError(f"init_data must be 1-{MAX_INIT_DATA} characters")
    fields = _fields(init_data)
    received = fields.get("hash", "")
    if len(received) != 64 or any(c not in "0123456789abcdef" for c in received):
        raise InitDataError("init_data has no valid hash")
    expected = hmac.new(secret_key(bot_token), data_check_string(fields).encode("utf-8"), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, received):
        raise InitDataError("init_data signature does not match")
    auth_date = fields.get("auth_date", "")
    if not auth_date.isascii() or not auth_date.isdigit() or len(auth_date) > 12:
        raise InitDataError("init_data has no valid auth_date")
    age = now - int(auth_date)
    if age > max_age or age < -FUTURE_SKEW:
        raise InitDataError("init_data is too old: open the mini-app again", code="init_data_expired")
    try:
        user = json.loads(fields.get("user", ""))
    except ValueError:
        raise InitDataError("init_data has no user") from None
    user_id = user.get("id") if isinstance(user, dict) else None
    if isinstance(user_id, bool) or not isinstance(user_id, int) or user_id <= 0:
        raise InitDataError("init_data has no user id")
    name = user.get("first_name")
    return WebAppUser(user_id, int(auth_date), name if isinstance(name, str) else "", received)
