"""Security events: what changed who can reach an account (sign-ins, password, 2FA, API keys, linked chats).

The core and plugins announce them with :func:`announce`; the
``security_event_occurred`` hook hands each one, as a
:class:`~orbchain.core.types.views.SecurityEvent`, to every plugin (the built-in
``activity`` plugin records it append-only and lists it on the dashboard).
An event is announced after the change it reports committed, and
announcing never undoes or fails that change: a plugin that raises is
logged and skipped (an event hook), and with no plugin listening nothing
is written anywhere.

Who did it comes from :data:`request_origin`, which the web layer's edge
sets for every request (the client IP as the rate limiter sees it, the
user agent, the request id); outside a request (a CLI command, a job) those
fields are None. Nobody passes them down.

Details are short text: a name that looks like a secret is refused
(``ValueError``: a programming error), values are cut to 200 characters,
and no caller puts a password, code, key or token in them.
"""

from __future__ import annotations

import logging
import re
from contextvars import ContextVar
from typing import Any, Mapping, Protocol

from ..types.views import SecurityEvent
from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

# The kinds the core announces (plugins add their own: the telegram plugin's chat_linked ...).
SIGN_IN = "sign_in"  # details: method (password, identity_provider, miniapp ...)
SIGN_IN_LOCKED = "sign_in_locked"  # too many wrong passwords: sign-in locked for a while (alert)
PASSWORD_CHANGED = "password_changed"
TOTP_ENABLED = "totp_enabled"  # details: via (dashboard, miniapp ...)
TOTP_DISABLED = "totp_disabled"
SECOND_FACTOR_REFUSED = "second_factor_refused"  # a sign-in passed its password (or provider), not its code
RECOVERY_CODE_USED = "recovery_code_used"  # details: method, remaining (alert: shown until dismissed)
RECOVERY_CODES_CREATED = "recovery_codes_created"  # a new set (2FA turned on, or asked for); details: via
API_KEY_CREATED = "api_key_created"  # details: key_id, label
API_KEY_ROTATED = "api_key_rotated"
API_KEY_REVOKED = "api_key_revoked"

MAX_DETAILS = 12
MAX_VALUE_LENGTH = 200
MAX_USER_AGENT_LENGTH = 300
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
# Detail names that would hold a secret: refused outright, so no caller can slip one in.
_SECRET_WORDS = ("password", "secret", "token", "code", "hash", "seed", "otp", "private")


class RequestOrigin(Protocol):
    """The request an event happened in, read only when an event is announced."""

    @property
    def client_ip(self) -> str: ...

    @property
    def user_agent(self) -> str: ...

    @property
    def request_id(self) -> str | None: ...

    @property
    def actor(self) -> str | None: ...  # the request principal's ``actor`` (a member, a key), None for the holder


request_origin: ContextVar[RequestOrigin | None] = ContextVar("orbchain_request_origin", default=None)


def clean_details(details: Mapping[str, Any] | None) -> dict[str, str]:
    """``details`` as short text values; ``ValueError`` for a malformed or secret-looking name."""
    clean: dict[str, str] = {}
    for name, value in (details or {}).items():
        if not isinstance(name, str) or not _NAME.match(name) or any(word in name for word in _SECRET_WORDS):
            raise ValueError(f"security event detail name {name!r} is malformed or names a secret")
        if value is None:
            continue
        clean[name] = str(value)[:MAX_VALUE_LENGTH]
    if len(clean) > MAX_DETAILS:
        raise ValueError(f"a security event carries at most {MAX_DETAILS} details")
    return clean


async def announce(gateway: "Gateway", merchant_id: str, kind: str, details: Mapping[str, Any] | None = None,
                   *, alert: bool = False, actor: str | None = None) -> SecurityEvent:
    """Tell every plugin (``security_event_occurred``) that ``kind`` happened to ``merchant_id``'s account.

    ``actor`` names who did it when the request's principal does not yet (a
    member signing in); by default, the request's. Returns the event.
    """
    if not isinstance(kind, str) or not _NAME.match(kind):
        raise ValueError(f"security event kind {kind!r} must be a lower-case name")
    origin = request_origin.get()
    event = SecurityEvent(
        merchant_id=merchant_id, kind=kind, at=gateway.now(), details=clean_details(details),
        client_ip=origin.client_ip if origin is not None else None,
        user_agent=origin.user_agent[:MAX_USER_AGENT_LENGTH] if origin is not None else None,
        request_id=origin.request_id if origin is not None else None, alert=alert,
        actor=actor or (origin.actor if origin is not None else None))
    log.info("security event %s for merchant %s", kind, merchant_id)
    await gateway.hooks.security_event_occurred(event=event)
    return event
