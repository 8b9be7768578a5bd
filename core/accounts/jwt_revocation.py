"""Dashboard JWTs ended before they expire: one token (sign-out) or all of a merchant's.

A dashboard JWT is a bearer credential for 24 hours; ending the browser
session alone would leave the token (or a copy of it) working on the JSON
API until then. Two mechanisms, both checked on every JWT request:

* one token: each carries a random ``jti``; revoking it records
  ``(jti, merchant_id, expires_at)`` in ``revoked_tokens`` until the token
  would have expired anyway (then the row guards nothing and is pruned, on
  every revocation and by the ``auth.prune_revoked_tokens`` job), so the
  table holds at most a day of sign-outs;
* all of a merchant's: ``token_version`` (``tv`` in every token) goes up, as
  a password change already does; a token issued before then no longer
  matches (web/auth.py). A token from before tokens carried a ``jti`` can
  only be ended this way.

The check reads no table per request: each process keeps a merchant's set
of revoked ids in the auth cache (core/accounts/auth_cache.py), emptied in every
process before a revocation answers (``changed``: NOTIFY and the fanout's
acknowledgements on PostgreSQL, m0018's trigger for writers outside the
core), so a revoked token is refused at once everywhere (SPEC 4.9's
standard for keys: no propagation window).
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from .auth_cache import changed, remembered
from .dashboard_tokens import dashboard_token_claims
from ..types.errors import Unauthorized
from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

CACHE_TABLE = "revoked_tokens"
PRUNE_JOB = "auth.prune_revoked_tokens"
PRUNE_SECONDS = 3600


async def revoke_token(gateway: "Gateway", token: str) -> bool:
    """End one dashboard JWT everywhere before answering; False when it is no valid token (nothing to end).

    Only a token the gateway signed and that has not expired is recorded, so
    a forged or mangled one changes nothing, and the merchant is the token's
    own ``sub``: nobody revokes another merchant's tokens by naming a ``jti``.
    """
    try:
        claims = dashboard_token_claims(gateway, token, gateway.now())
    except Unauthorized:
        return False
    jti = claims.get("jti")
    if jti is None:
        await revoke_all_tokens(gateway, claims["sub"])  # issued before tokens had ids
        return True
    await prune(gateway)
    added = await gateway.db.execute(
        "INSERT INTO revoked_tokens (jti, merchant_id, expires_at, revoked_at) VALUES (:j, :m, :e, :now)"
        " ON CONFLICT DO NOTHING RETURNING jti",
        {"j": jti, "m": claims["sub"], "e": int(claims["exp"]), "now": gateway.now()})
    if added is not None:
        await changed(gateway)
        log.info("merchant %s revoked a dashboard token", claims["sub"])
    return True


async def revoke_all_tokens(gateway: "Gateway", merchant_id: str) -> None:
    """End every dashboard (and mini-app) token the merchant holds now, everywhere, before answering."""
    await gateway.db.execute(
        "UPDATE merchants SET token_version = token_version + 1, updated_at = :now WHERE id = :id",
        {"now": gateway.now(), "id": merchant_id})
    await changed(gateway)
    log.info("merchant %s revoked all its dashboard tokens", merchant_id)


async def is_revoked(gateway: "Gateway", claims: Mapping[str, Any]) -> bool:
    """Whether the decoded token's ``jti`` was revoked; from this process's cache when it holds the merchant's."""
    jti = claims.get("jti")
    if jti is None:
        return False
    merchant_id = claims["sub"]
    revoked = await remembered(gateway, CACHE_TABLE, merchant_id, lambda: _revoked_ids(gateway, merchant_id))
    return jti in revoked


async def _revoked_ids(gateway: "Gateway", merchant_id: str) -> frozenset[str]:
    rows = await gateway.db.fetch_all(
        "SELECT jti FROM revoked_tokens WHERE merchant_id = :m AND expires_at > :now",
        {"m": merchant_id, "now": gateway.now()})
    return frozenset(r["jti"] for r in rows)


async def prune(gateway: "Gateway") -> None:
    """Forget revocations of tokens that have expired by now (they guard nothing)."""
    await gateway.db.execute("DELETE FROM revoked_tokens WHERE expires_at <= :now", {"now": gateway.now()})
