"""Invitations: a single-use, expiring link an owner or admin copies (or has e-mailed) to a new member.

The token is 32 random bytes shown once; only its SHA-256 is stored. Accepting
sets ``accepted_at`` with a conditional UPDATE (still unused, not expired) and
creates the member in the same transaction, so two tabs accepting one link
make one member and the other is told the link was used.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from typing import Any

from ...api import (
    Conflict, Field, Gone, NotFound, Principal, ValidationError, account_by_email, announce_security_event,
    hash_password, insert_statement, is_unique_violation, validate,
)
from ...api.merchant import validate_with_passwords
from . import members, roles
from .settings import settings_of

ACCEPT_PATH = "/app/team/accept"
_TOKEN = re.compile(r"[A-Za-z0-9_-]{20,64}")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def link(gateway: Any, token: str) -> str:
    return f"{gateway.config.base_url.rstrip('/')}{ACCEPT_PATH}?token={token}"


async def create(gateway: Any, merchant_id: str, form: Any, principal: Principal | None) -> tuple[str, str]:
    """Invite ``form``'s e-mail with ``form``'s role: (e-mail, link to show). 400 naming the field, 409 taken."""
    clean = validate(dict(form), [Field("email", required=True, max_len=254, kind="email"),
                                  Field("role", required=True, max_len=40)])
    email = clean["email"].strip().lower()
    role = await roles.check_role(gateway, merchant_id, clean["role"])
    if role == roles.OWNER and await members.acting_role(gateway, principal) != roles.OWNER:
        raise ValidationError({"role": "only an owner may invite an owner"})
    if await account_by_email(gateway, email) is not None or await gateway.db.fetch_val(
            "SELECT id FROM team_members WHERE email = :e", {"e": email}) is not None:
        raise Conflict("this e-mail already signs in to an Orbchain account; invite another address")
    token = secrets.token_urlsafe(32)
    now = gateway.now()
    row = {"id": "inv_" + secrets.token_hex(8), "merchant_id": merchant_id, "email": email, "role": role,
           "token_hash": _digest(token), "invited_by": principal.actor if principal is not None else None,
           "expires_at": now + settings_of(gateway).invite_seconds, "accepted_at": None, "created_at": now}
    await gateway.db.execute(insert_statement("team_invites", row), row)
    await announce_security_event(gateway, merchant_id, "member_invited", {"member": email, "role": role})
    return email, link(gateway, token)


async def pending(gateway: Any, merchant_id: str) -> list[dict[str, Any]]:
    """Invitations not accepted and not expired, newest first."""
    return await gateway.db.fetch_all(
        "SELECT id, email, role, expires_at, created_at FROM team_invites WHERE merchant_id = :m"
        " AND accepted_at IS NULL AND expires_at > :now ORDER BY created_at DESC, id DESC",
        {"m": merchant_id, "now": gateway.now()})


async def cancel(gateway: Any, merchant_id: str, invite_id: Any) -> None:
    if not isinstance(invite_id, str) or len(invite_id) > 40:
        raise ValidationError({"invite_id": "must name an invitation of this account"})
    gone = await gateway.db.execute("DELETE FROM team_invites WHERE id = :id AND merchant_id = :m"
                                    " AND accepted_at IS NULL RETURNING id", {"id": invite_id, "m": merchant_id})
    if gone is None:
        raise NotFound("no such pending invitation")


async def find(gateway: Any, token: Any) -> dict[str, Any]:
    """The invitation a link's token names, if it can still be accepted: 404 unknown, 410 used or expired."""
    row = None
    if isinstance(token, str) and _TOKEN.fullmatch(token):
        row = await gateway.db.fetch_one("SELECT * FROM team_invites WHERE token_hash = :h", {"h": _digest(token)})
    if row is None:
        raise NotFound("this invitation link is not valid: ask for a new one", code="invite_invalid")
    if row["accepted_at"] is not None:
        raise Gone("this invitation was used already: sign in, or ask for a new one", code="invite_used")
    if int(row["expires_at"]) <= gateway.now():
        raise Gone("this invitation has expired: ask for a new one", code="invite_expired")
    return dict(row)


async def accept(gateway: Any, form: Any) -> str:
    """Accept the link in ``form`` with the member's chosen password; the member's e-mail (to sign in with)."""
    invite = await find(gateway, form.get("token"))
    clean = validate_with_passwords(dict(form), [Field("token", required=True, max_len=100)], {"password": True})
    if form.get("password") != form.get("password_confirm"):
        raise ValidationError({"password_confirm": "does not match the password"})
    password_hash = await hash_password(gateway, clean["password"])
    now = gateway.now()
    db = gateway.db
    try:
        async with db.transaction():
            claimed = await db.execute(
                "UPDATE team_invites SET accepted_at = :now WHERE id = :id AND accepted_at IS NULL"
                " AND expires_at > :now RETURNING id", {"now": now, "id": invite["id"]})
            if claimed is None:
                raise Gone("this invitation was used already: sign in, or ask for a new one", code="invite_used")
            row = {"id": "mbr_" + secrets.token_hex(10), "merchant_id": invite["merchant_id"],
                   "email": invite["email"], "role": invite["role"], "password_hash": password_hash,
                   "invited_by": invite["invited_by"], "created_at": now}
            await db.execute(insert_statement("team_members", row), row)
    except Exception as exc:
        if is_unique_violation(exc):
            raise Conflict("this e-mail is already a member of an account") from None
        raise
    await announce_security_event(gateway, invite["merchant_id"], "member_joined",
                                  {"member": invite["email"], "role": invite["role"]})
    return invite["email"]
