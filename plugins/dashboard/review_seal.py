"""The review token of a payout's confirm step: the reviewed values, sealed so the confirm pays exactly those.

The review page carries ``<body>.<mac>``: the body is the reviewed payout (or
batch) as JSON, with its kind, the merchant and an expiry; the MAC (HMAC-SHA256
under the gateway's key for this purpose, ``derived_key``, as the session's) also covers
this browser session's CSRF token. So the confirm cannot swap an address or an
amount, cannot be taken to another session or account, and goes stale after
``REVIEW_SECONDS``. Nothing is stored: a second confirm of the same review is
told apart by the payout's own idempotency key (docs/decisions.md).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from typing import Any

from ...api import InvalidRequest, derived_key
from .session import Session

REVIEW_SECONDS = 15 * 60
REFUSED = ("This review was changed, has expired (a review lasts 15 minutes) or belongs to another session."
           " Nothing was sent: review the payout again.")


def _key(gateway: Any) -> bytes:
    return derived_key(gateway, "dashboard/payout-review")


def _mac(gateway: Any, session: Session, body: str) -> str:
    digest = hmac.new(_key(gateway), f"{session.csrf}.{body}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def seal(gateway: Any, session: Session, kind: str, payload: Any) -> str:
    """A token for ``payload`` (JSON, a Decimal as its exact text), good for ``REVIEW_SECONDS``
    in this session for this kind of confirm."""
    claims = {"kind": kind, "merchant": session.merchant_id, "expires": gateway.now() + REVIEW_SECONDS,
              "payload": payload}
    text = json.dumps(claims, separators=(",", ":"), default=str)
    body = base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
    return f"{body}.{_mac(gateway, session, body)}"


def unseal(gateway: Any, session: Session, kind: str, token: Any) -> Any:
    """The payload ``seal`` put in ``token``; 400 ``review_invalid`` if it was altered, is stale or not ours."""
    body, _, mac = (token if isinstance(token, str) else "").partition(".")
    if not body or not hmac.compare_digest(_mac(gateway, session, body).encode(), mac.encode()):
        raise InvalidRequest(REFUSED, code="review_invalid")
    try:
        claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (binascii.Error, ValueError):  # pragma: no cover - the MAC vouches for what we wrote
        raise InvalidRequest(REFUSED, code="review_invalid") from None
    if (claims.get("kind") != kind or claims.get("merchant") != session.merchant_id
            or int(claims.get("expires", 0)) < gateway.now()):
        raise InvalidRequest(REFUSED, code="review_invalid")
    return claims["payload"]
