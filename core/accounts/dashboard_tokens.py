"""A dashboard JWT read with the gateway's own secret: the claims, never the secret, reach the caller.

Why: the dashboard plugin's cookie session carries the dashboard JWT the core issued, and checking it
needs the JWT secret. A plugin must not hold that secret (it could sign any merchant's token, issue 44
item 4), so the core checks the token and hands back its claims; the JSON API (web/auth.py) and
revocation read tokens through the same function.
"""

from __future__ import annotations

from typing import Any

from . import auth
from ..contract.gateway import PluginGateway as Gateway


def dashboard_token_claims(gateway: Gateway, token: str, now: int) -> dict[str, Any]:
    """The claims of ``token`` when the gateway signed it and it is unexpired at ``now`` (``0``: expiry
    not judged), else ``Unauthorized``; revocation and the token version are the caller's checks."""
    return auth.decode_dashboard_token(gateway.require_secrets().jwt_secret, token, now)
