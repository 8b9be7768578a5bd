"""The self-contained link token ``<chat_id>.<expiry>.<hmac>`` (SPEC 4.13, 8: 10 minutes).

The bot issues one when a user sends /start; whoever opens it while signed
in to the dashboard binds that chat to their account. Nothing is stored at
issue: the HMAC (SHA-256, hex, keyed by ``key_of(gateway)``, the gateway's key
for this purpose only, ``derived_key``) proves the gateway made it for that chat
and that expiry. Completing a link spends the token (``store.spend_link_token``),
so a token works once even inside its ten minutes.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import TYPE_CHECKING, NamedTuple

from ...api import derived_key

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

LINK_TOKEN_TTL = 600  # SPEC 8: link token 10 minutes
MAX_TOKEN_LENGTH = 128
_SHAPE = re.compile(r"^(-?[1-9][0-9]{0,19})\.([1-9][0-9]{0,11})\.([0-9a-f]{64})$")


class LinkTokenError(ValueError):
    """Not a token of ours (``link_token_invalid``), or expired (``link_token_expired``); safe to show."""

    def __init__(self, message: str, code: str = "link_token_invalid") -> None:
        super().__init__(message)
        self.code = code


class LinkToken(NamedTuple):
    chat_id: int
    expires_at: int
    mac: str


def key_of(gateway: "Gateway") -> bytes:
    """The key link tokens are signed with (``issue``, ``verify``): this purpose's, never the root secret."""
    return derived_key(gateway, "telegram/link-token")


def _mac(key: bytes, chat_id: int, expires_at: int) -> str:
    return hmac.new(key, f"{chat_id}.{expires_at}".encode(), hashlib.sha256).hexdigest()


def issue(key: bytes, chat_id: int, now: int) -> str:
    expires_at = now + LINK_TOKEN_TTL
    return f"{chat_id}.{expires_at}.{_mac(key, chat_id, expires_at)}"


def verify(key: bytes, token: object, now: int) -> LinkToken:
    """The token's chat and expiry when it is ours and unexpired; ``LinkTokenError`` otherwise."""
    match = _SHAPE.match(token) if isinstance(token, str) and len(token) <= MAX_TOKEN_LENGTH else None
    if match is None:
        raise LinkTokenError("this link is not valid")
    chat_id, expires_at, mac = int(match.group(1)), int(match.group(2)), match.group(3)
    if not hmac.compare_digest(_mac(key, chat_id, expires_at), mac):
        raise LinkTokenError("this link is not valid")
    if expires_at <= now:
        raise LinkTokenError("this link has expired: send /start to the bot again", "link_token_expired")
    return LinkToken(chat_id, expires_at, mac)
