"""The ``google-auth`` fragment: what the callback hands the dashboard app.

``/app#google-auth=<payload>``, where the payload is the unpadded base64url
encoding of a compact JSON object: ``token`` (dashboard JWT),
``merchant_id``, ``email``, ``new_account`` (boolean), ``landing`` (binds the
payload to the browser that started the sign-in: ``landings.py``) and, for a
new account only, ``api_keys`` (the three legacy keys, shown once). base64url keeps the
value one opaque fragment token without percent-encoding; it is not
encryption. It travels in the fragment only, which browsers never send to
a server, in a request line, an access log or a Referer header.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from ...api import AccountSession

FRAGMENT_KEY = "google-auth"


def encode(session: AccountSession, new_account: bool, landing: str) -> str:
    body: dict[str, Any] = {"token": session.token, "merchant_id": session.merchant_id, "email": session.email,
                            "new_account": new_account, "landing": landing}
    if session.api_keys is not None:
        body["api_keys"] = dict(session.api_keys)
    raw = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode(value: str) -> dict[str, Any]:
    """The object inside a payload (for the dashboard app's tests and tools)."""
    padded = value + "=" * (-len(value) % 4)
    result = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    if not isinstance(result, dict):
        raise ValueError("payload is not an object")
    return result


def fragment(app_path: str, session: AccountSession, landing: str) -> str:
    return f"{app_path}#{FRAGMENT_KEY}={encode(session, session.api_keys is not None, landing)}"
