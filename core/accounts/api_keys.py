"""Scoped API keys (SPEC 4.9, 2.14): list, create, revoke and rotate.

Only a key's SHA-256 and its 8-character prefix are stored; the plaintext is
returned once. Rotation keeps each previous secret valid for its own 30-minute
grace window (``api_key_secrets``); revocation ends them all immediately. Legacy keys are listed masked and rotate
through the account settings instead. Creating or rotating needs every scope of the key (``key_powers``), and
the key records the person who did it (``issued_by``).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import secrets
from dataclasses import dataclass
from typing import Any, Sequence

from . import auth, security_events
from .key_powers import KeyIssuer, check_may_issue, confirm_issuer, lock_account_keys, may_rotate_legacy
from .merchants import _insert_key, _json, check_webhook_url, legacy_kind_of, new_webhook_secret
from .auth_cache import changed
from ..infra.db import Database, Row
from ..types.errors import InvalidRequest, NotFound, ValidationError
from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

SCOPED_KEY_SOFT_LIMIT = 50

def masked_key(prefix: str, suffix: str | None) -> str:
    """SPEC 4.9: the last 8 characters visible, the rest masked (only a hash of it is stored).

    A key issued before the tail was stored (migration m0011) shows its prefix instead.
    """
    if suffix:
        return "*" * 12 + suffix
    return prefix + "*" * 12


def key_view(row: Row) -> dict[str, Any]:
    """SPEC 2.14; never the hash."""
    return {
        "id": row["id"],
        "label": row["label"],
        "prefix": row["prefix"],
        "scopes": _json(row["scopes"], []),
        "coin_allowlist": _json(row["coin_allowlist"], []),
        "ip_allowlist": _json(row["ip_allowlist"], []),
        "webhook_url": row["webhook_url"],
        "rate_limit_rpm": row["rate_limit_rpm"],
        "last_used_at": row["last_used_at"],
        "revoked_at": row["revoked_at"],
        "expires_at": row["expires_at"],
        "created_at": row["created_at"],
        "is_legacy": bool(row["is_legacy"]),
        "brand_id": row["brand_id"],
        "issued_by": row["issued_by"],
    }


def may_rotate(gateway: Gateway, issuer: KeyIssuer, key: dict[str, Any]) -> bool:
    """Whether ``issuer`` may rotate the listed ``key`` (``key_view``): what the pages offer."""
    if key["is_legacy"]:
        return may_rotate_legacy(gateway, issuer, legacy_kind_of(key["id"]))
    return not issuer.lacking(key["scopes"])


async def list_api_keys(db: Database, merchant_id: str) -> dict[str, Any]:
    rows = await db.fetch_all("SELECT * FROM api_keys WHERE merchant_id = :m ORDER BY created_at, id",
                              {"m": merchant_id})
    result: dict[str, Any] = {f"{kind}_api_key": None for kind in auth.LEGACY_KINDS}
    for row in rows:
        if row["is_legacy"]:
            result[f"{row['kind']}_api_key"] = masked_key(row["prefix"], row["suffix"])
    result["keys"] = [key_view(row) for row in rows]
    return result


def parse_cidrs(values: Sequence[str]) -> list[str]:
    """Normalised CIDRs (a bare address is a /32 or /128), or a validation error."""
    clean = []
    for value in values:
        try:
            clean.append(str(ipaddress.ip_network(value, strict=False)))
        except ValueError:
            raise ValidationError({"ip_allowlist": f"{value} is not a valid CIDR"}) from None
    return clean


@dataclass(frozen=True)
class ScopedKeyRequest:
    label: str
    scopes: Sequence[str]
    coin_allowlist: Sequence[str] = ()
    ip_allowlist: Sequence[str] = ()
    webhook_url: str | None = None
    rate_limit_rpm: int | None = None
    expires_at: int | None = None
    brand_id: str | None = None


async def create_scoped_key(gateway: Gateway, merchant_id: str, req: ScopedKeyRequest, *,
                            issuer: KeyIssuer) -> dict[str, Any]:
    """Create a scoped key for ``issuer``; the plaintext (and its webhook secret) is in the result once.

    403 ``scope_not_held`` when ``issuer`` lacks one of its scopes (as they are when it is written).
    """
    db, now = gateway.db, gateway.now()
    unknown = [c for c in req.coin_allowlist if c not in gateway.coins]
    if unknown:
        raise ValidationError({"coin_allowlist": f"unsupported value(s): {', '.join(unknown)}"})
    cidrs = parse_cidrs(req.ip_allowlist)
    if req.expires_at is not None and req.expires_at <= now:
        raise ValidationError({"expires_at": "must be in the future"})
    if req.brand_id is not None:
        await check_key_brand(gateway, merchant_id, req.brand_id)
    webhook_url = await check_webhook_url(gateway, req.webhook_url) if req.webhook_url else None
    webhook_secret = new_webhook_secret() if webhook_url else None
    scopes = list(dict.fromkeys(req.scopes))
    issued = auth.generate_api_key("scoped")
    key_id = "key_" + secrets.token_hex(10)
    async with db.transaction():
        # Lock the merchant row so concurrent creations cannot overshoot the limit, nor outrun a removal.
        await lock_account_keys(gateway, merchant_id)
        check_may_issue(await confirm_issuer(gateway, merchant_id, issuer), scopes, "create")
        active = await db.fetch_val(
            "SELECT COUNT(*) FROM api_keys WHERE merchant_id = :m AND is_legacy = :f AND revoked_at IS NULL"
            " AND (expires_at IS NULL OR expires_at > :now)",
            {"m": merchant_id, "f": False, "now": now},
        )
        if int(active) >= SCOPED_KEY_SOFT_LIMIT:
            raise InvalidRequest(f"API key limit reached: at most {SCOPED_KEY_SOFT_LIMIT} active keys per account")
        await _insert_key(
            db, key_id=key_id, merchant_id=merchant_id, kind="scoped", issued=issued, now=now, label=req.label,
            scopes=json.dumps(scopes), coin_allowlist=json.dumps(list(dict.fromkeys(req.coin_allowlist))),
            ip_allowlist=json.dumps(cidrs), webhook_url=webhook_url, webhook_secret=webhook_secret,
            rate_limit_rpm=req.rate_limit_rpm, expires_at=req.expires_at, brand_id=req.brand_id, is_legacy=False,
            issued_by=issuer.person,
        )
    log.info("merchant %s created API key %s", merchant_id, key_id)
    await security_events.announce(gateway, merchant_id, security_events.API_KEY_CREATED,
                                   {"key_id": key_id, "label": req.label, "scopes": " ".join(scopes),
                                    "issued_by": issuer.person})
    result = {"api_key": issued.plaintext, "id": key_id, "label": req.label, "prefix": issued.prefix,
              "scopes": scopes, "created_at": now, "issued_by": issuer.person}
    if webhook_secret:
        result["webhook_secret"] = webhook_secret
    return result


async def check_key_brand(gateway: Gateway, merchant_id: str, brand_id: str) -> None:
    """400 unless a plugin (``decide_key_brand_allowed``) vouches that ``brand_id`` is this account's live brand.

    The core stores the tag and copies it onto payments; only a brands
    plugin knows what a brand is, so with none installed a brand_id is refused.
    """
    allowed = await gateway.hooks.decide_key_brand_allowed(merchant_id=merchant_id, brand_id=brand_id)
    if allowed is not True:
        raise ValidationError({"brand_id": "is not a brand of this account"})


async def _own_key(db: Database, merchant_id: str, key_id: str) -> Row:
    row = await db.fetch_one("SELECT * FROM api_keys WHERE id = :id AND merchant_id = :m" + db.for_update,
                             {"id": key_id, "m": merchant_id})
    if row is None:
        raise NotFound()
    if row["is_legacy"]:
        raise InvalidRequest("legacy keys cannot be revoked, rotated or branded here;"
                             " use /dashboard/settings/rotate-key")
    return row


async def revoke_scoped_key(gateway: Gateway, merchant_id: str, key_id: str) -> dict[str, Any]:
    db, now = gateway.db, gateway.now()
    async with db.transaction():
        row = await _own_key(db, merchant_id, key_id)
        if row["revoked_at"] is not None:
            return {"ok": True, "already_revoked": True, "id": key_id, "revoked_at": row["revoked_at"]}
        await db.execute("UPDATE api_keys SET revoked_at = :now WHERE id = :id", {"now": now, "id": key_id})
        # revoked_at already refuses every rotated-out secret; drop them too.
        await db.execute("DELETE FROM api_key_secrets WHERE key_id = :id", {"id": key_id})
    await changed(gateway)
    log.info("merchant %s revoked API key %s", merchant_id, key_id)
    await security_events.announce(gateway, merchant_id, security_events.API_KEY_REVOKED,
                                   {"key_id": key_id, "label": row["label"]})
    return {"ok": True, "already_revoked": False, "id": key_id, "revoked_at": now}


async def _live_key_for(gateway: Gateway, merchant_id: str, key_id: str, issuer: KeyIssuer, verb: str) -> Row:
    """The live scoped key ``issuer`` may ``verb`` (holding its every scope), locked with the account's keys;
    call inside the transaction that changes it."""
    await lock_account_keys(gateway, merchant_id)
    row = await _own_key(gateway.db, merchant_id, key_id)
    if row["revoked_at"] is not None:
        raise InvalidRequest("API key is revoked")
    check_may_issue(await confirm_issuer(gateway, merchant_id, issuer), _json(row["scopes"], []), verb)
    return row


async def change_key_brand(gateway: Gateway, merchant_id: str, key_id: str, brand_id: str | None, *,
                           issuer: KeyIssuer) -> dict[str, Any]:
    """Tag the key's payments from now on with ``brand_id`` (a live brand of this account), or none (None).

    Payments it made keep their brand. As rotating does, it needs every scope of the key (403
    ``scope_not_held``): the brand picks where the key's payments' webhooks go. A revoked key stays as it was.
    """
    if brand_id is not None:
        await check_key_brand(gateway, merchant_id, brand_id)
    db = gateway.db
    async with db.transaction():
        row = await _live_key_for(gateway, merchant_id, key_id, issuer, "change")
        await db.execute("UPDATE api_keys SET brand_id = :b WHERE id = :id", {"b": brand_id, "id": key_id})
    await changed(gateway)
    log.info("merchant %s set the brand of API key %s to %s", merchant_id, key_id, brand_id)
    return key_view({**row, "brand_id": brand_id})


async def rotate_scoped_key(gateway: Gateway, merchant_id: str, key_id: str, *,
                            issuer: KeyIssuer) -> dict[str, Any]:
    """A fresh secret, now ``issuer``'s; the current one stays valid for the grace window.

    Each rotated-out secret keeps its own grace in ``api_key_secrets``, and
    the person who held it (a request with it counts as theirs): rotating
    again inside the window does not cut an older secret's grace short.
    Revoking the key ends every one of them at once. 403
    ``scope_not_held`` when ``issuer`` lacks one of the key's scopes.
    """
    db, now = gateway.db, gateway.now()
    issued = auth.generate_api_key("scoped")
    valid_until = now + auth.ROTATION_GRACE_SECONDS
    async with db.transaction():
        row = await _live_key_for(gateway, merchant_id, key_id, issuer, "rotate")
        await db.execute("DELETE FROM api_key_secrets WHERE key_id = :id AND valid_until <= :now",
                         {"id": key_id, "now": now})
        await db.execute(
            "INSERT INTO api_key_secrets (key_hash, key_id, valid_until, created_at, issued_by)"
            " VALUES (:h, :id, :until, :now, :by)",
            {"h": row["key_hash"], "id": key_id, "until": valid_until, "now": now, "by": row["issued_by"]},
        )
        await db.execute("UPDATE api_keys SET key_hash = :h, prefix = :p, suffix = :s, issued_by = :by WHERE id = :id",
                         {"h": issued.key_hash, "p": issued.prefix, "s": issued.suffix, "id": key_id,
                          "by": issuer.person})
    await changed(gateway)
    log.info("merchant %s rotated API key %s", merchant_id, key_id)
    await security_events.announce(gateway, merchant_id, security_events.API_KEY_ROTATED,
                                   {"key_id": key_id, "label": row["label"], "issued_by": issuer.person})
    return {"id": key_id, "api_key": issued.plaintext, "prefix": issued.prefix,
            "previous_valid_until": valid_until, "issued_by": issuer.person}
