"""Keys derived by purpose from the gateway's root secret: what a plugin gets instead of the secret itself.

Why: a plugin that signs its own cookies or tokens needs a key every worker shares, and until issue 44
it took the JWT secret (and with it could sign dashboard JWTs, or read the HD seed beside it). Now it
asks for a key for one *purpose*, ``"<plugin>/<name>"`` (``"telegram/link-token"``), and gets 32 bytes
it can neither turn back into the root secret nor into another purpose's key (HMAC-SHA256 is a PRF).

Derivation: HKDF-Expand (RFC 5869, SHA-256, one 32-byte block) with the JWT secret as the pseudo-random
key and ``info = b"orbchain/derived-key/v1\\x00" + purpose``. The info can never be the signing input of
a JWT (base64url and dots only: no NUL), so no purpose key is a dashboard token's signature.

Compatibility: the purposes that existed before (each plugin did ``hmac(jwt_secret, LABEL)``) keep their
label in ``_LEGACY_LABELS``, so cookies, link tokens and mini-app sessions issued before the upgrade
stay valid. That table is closed: a new purpose takes the HKDF form. The namespace ``core/`` is the
core's own (the payout binding key); ``derived_key`` refuses it, so a plugin never gets the key the
signing boundary trusts. Which plugin may ask for which namespace is checked statically for the built-ins
(tests/unit/test_no_plugin_secrets.py: a plugin under ``plugins/<name>/`` names ``"<name>/..."`` only).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Protocol

from .secrets import Secrets

CORE_NAMESPACE = "core"
_INFO_PREFIX = b"orbchain/derived-key/v1\x00"
_PURPOSE = re.compile(r"^([a-z][a-z0-9_]{0,39})/([a-z0-9][a-z0-9._-]{0,63})$")

# Labels of the keys plugins derived by hand before derived_key existed: kept so what they issued still
# verifies. Closed: never add to it (a new purpose uses the HKDF form).
_LEGACY_LABELS: dict[str, bytes] = {
    "core/payout-binding": b"orbchain payout binding v1",
    "dashboard/session": b"orbchain dashboard session",
    "dashboard/payout-review": b"orbchain dashboard payout review",
    "oidc/login-state": b"orbchain plugin oidc: login state cookie v1",
    "telegram/link-token": b"orbchain telegram link token v1",
    "telegram/miniapp-session": b"orbchain tgapp session v1",
}


class HoldsSecrets(Protocol):
    """What ``derived_key`` needs of the gateway: the loaded secrets (the gateway raises before they are)."""

    def require_secrets(self) -> Secrets: ...


class PurposeError(ValueError):
    """A purpose that is not ``"<namespace>/<name>"`` in lower case, or one a plugin may not ask for."""


def check_purpose(purpose: object) -> str:
    """``purpose`` when it is ``"<namespace>/<name>"`` (lower case, digits, ``_``; the name also ``.-``)."""
    if not isinstance(purpose, str) or _PURPOSE.match(purpose) is None:
        raise PurposeError(f"a key purpose reads '<plugin>/<name>' in lower case, not {purpose!r}")
    return purpose


def purpose_key(secrets: Secrets, purpose: str) -> bytes:
    """The 32-byte key for ``purpose`` under this deployment's root secret (any namespace: the core's too)."""
    check_purpose(purpose)
    legacy = _LEGACY_LABELS.get(purpose)
    if legacy is not None:
        return hmac.new(secrets.jwt_secret, legacy, hashlib.sha256).digest()
    return hmac.new(secrets.jwt_secret, _INFO_PREFIX + purpose.encode() + b"\x01", hashlib.sha256).digest()


def derived_key(gateway: HoldsSecrets, purpose: str) -> bytes:
    """The key a plugin signs with for ``purpose`` (``"<your plugin>/<name>"``): the same in every worker and
    across restarts, changed only by rotating the JWT secret. The ``core/`` namespace is refused."""
    if check_purpose(purpose).split("/", 1)[0] == CORE_NAMESPACE:
        raise PurposeError(f"the key purpose {purpose!r} is the core's own: name your plugin's namespace")
    return purpose_key(gateway.require_secrets(), purpose)
