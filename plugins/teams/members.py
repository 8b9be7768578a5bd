"""Members of an account: who they are, their role, changing it and removing them, with the owner rules.

The account holder (the e-mail the account was opened with) is its first
owner and stays one: their credentials are the account's own, so they
cannot be removed or demoted, and an account therefore always keeps an
owner. Members with the owner role are owners too; only an owner may make
someone an owner or change or remove an owner. Removing a member deletes
their row: ``decide_member`` then answers None and every session they hold
is refused at its next request (dashboard and JSON API alike). The API keys
they issued (created or last rotated) are revoked with it, unless the remover
chooses to keep them; either choice is in the activity log (issue 42).

A member's answer (role, permissions, the 2FA rule's effect) is read on every
request they make, so it is cached per process (``orbchain.api.cached``):
every change to it here, in roles.py, policy.py, joining.py and in the core's
member 2FA awaits ``cache_changed_everywhere`` before answering, so a removed
or demoted member is refused in every process at their next request; changes
made in psql reach the caches through the tables' triggers (m0004, core m0055).
"""

from __future__ import annotations

from typing import Any

from ...api import (
    Forbidden, Member, MemberLogin, Principal, ValidationError, announce_security_event, cache_changed_everywhere,
    cached, forget_member_second_factor, keys_issued_by, member_person, merchant_row, revoke_keys_issued_by,
    update_row,
)
from . import policy, roles

HOLDER_ID = "holder"  # the account holder's entry in the members list (not a row)
# What happens to the API keys a removed member issued: revoked (the default) or kept, by the remover's choice.
REVOKE_KEYS, KEEP_KEYS = "revoke", "keep"


CACHE_TABLE = "team_members"


async def member(gateway: Any, merchant_id: str, member_id: str) -> Member | None:
    """The member as a session acts: None when removed (or their custom role deleted); cached (module doc)."""
    return await cached(gateway, CACHE_TABLE, (merchant_id, member_id),
                        lambda: _read_member(gateway, merchant_id, member_id))


async def _read_member(gateway: Any, merchant_id: str, member_id: str) -> Member | None:
    row = await gateway.db.fetch_one("SELECT * FROM team_members WHERE id = :id AND merchant_id = :m",
                                     {"id": member_id, "m": merchant_id})
    if row is None:
        return None
    scopes = await policy.limit(gateway, merchant_id, row["id"],
                                await roles.role_scopes(gateway, merchant_id, row["role"]) or frozenset())
    return Member(row["id"], row["merchant_id"], row["email"], row["role"], scopes)


async def login(gateway: Any, email: str) -> MemberLogin | None:
    row = await gateway.db.fetch_one("SELECT * FROM team_members WHERE email = :e", {"e": email})
    return None if row is None else MemberLogin(row["id"], row["merchant_id"], row["email"], row["password_hash"])


async def listing(gateway: Any, merchant_id: str, holder_email: str) -> list[dict[str, Any]]:
    """Everyone on the account: the holder first, then members oldest first."""
    rows = await gateway.db.fetch_all(
        "SELECT id, email, role, proven_by, created_at FROM team_members WHERE merchant_id = :m"
        " ORDER BY created_at, id",
        {"m": merchant_id})
    return [{"id": HOLDER_ID, "email": holder_email, "role": roles.OWNER, "holder": True, "created_at": None,
             "proven_by": None},
            *({**row, "holder": False} for row in rows)]


async def acting_role(gateway: Any, principal: Principal | None) -> str:
    """The role of whoever is signed in (the holder: owner)."""
    if principal is None or principal.member_id is None:
        return roles.OWNER
    row = await gateway.db.fetch_one("SELECT role FROM team_members WHERE id = :id", {"id": principal.member_id})
    return row["role"] if row is not None else ""


async def _target(gateway: Any, merchant_id: str, member_id: Any) -> dict[str, Any]:
    if member_id == HOLDER_ID:
        raise Forbidden("the account holder is the account's owner: they cannot be removed or demoted, so the"
                        " account always keeps an owner", code="last_owner")
    if not isinstance(member_id, str) or not member_id.startswith("mbr_") or len(member_id) > 40:
        raise ValidationError({"member_id": "must name a member of this account"})
    return dict(await merchant_row(gateway, "team_members", merchant_id, member_id))


async def require_owner(gateway: Any, principal: Principal | None) -> None:
    if await acting_role(gateway, principal) != roles.OWNER:
        raise Forbidden("only an owner may change the team's two-factor rule", code="owner_required")


async def _require_owner_for(gateway: Any, principal: Principal | None, *roles_involved: str) -> None:
    if roles.OWNER in roles_involved and await acting_role(gateway, principal) != roles.OWNER:
        raise Forbidden("only an owner may make someone an owner or change an owner", code="owner_required")


async def change_role(gateway: Any, merchant_id: str, member_id: Any, role: Any, principal: Principal | None) -> None:
    target = await _target(gateway, merchant_id, member_id)
    role = await roles.check_role(gateway, merchant_id, role)
    await _require_owner_for(gateway, principal, target["role"], role)
    if role == target["role"]:
        return
    await update_row(gateway, "team_members", target["id"], {"role": role}, merchant_id=merchant_id)
    await cache_changed_everywhere(gateway)
    await announce_security_event(gateway, merchant_id, "member_role_changed",
                                  {"member": target["email"], "role_was": target["role"], "role": role})


def keys_choice(value: Any) -> str:
    """The remover's choice for the member's API keys: ``revoke`` (also when not given) or ``keep``; else 400."""
    if value in (None, "", REVOKE_KEYS):
        return REVOKE_KEYS
    if value == KEEP_KEYS:
        return KEEP_KEYS
    raise ValidationError({"api_keys": "choose revoke or keep"})


async def remove(gateway: Any, merchant_id: str, member_id: Any, principal: Principal | None,
                 api_keys: Any = REVOKE_KEYS) -> list[dict[str, Any]]:
    """Remove the member and revoke the keys they issued (``api_keys`` ``keep``: keep them); the keys concerned.

    The removal and the revocation commit together; a concurrent removal that got there first is answered
    with nothing done twice (and nothing announced twice).
    """
    target = await _target(gateway, merchant_id, member_id)
    await _require_owner_for(gateway, principal, target["role"])
    choice = keys_choice(api_keys)
    person = member_person(target["id"])

    async def delete_member() -> bool:
        return await gateway.db.execute("DELETE FROM team_members WHERE id = :id AND merchant_id = :m RETURNING id",
                                        {"id": target["id"], "m": merchant_id}) is not None

    if choice == REVOKE_KEYS:
        keys = await revoke_keys_issued_by(gateway, merchant_id, person, first=delete_member)
    else:
        keys = await keys_issued_by(gateway, merchant_id, person) if await delete_member() else None
    await cache_changed_everywhere(gateway)  # removed everywhere before anyone hears it is done
    if keys is None:  # a concurrent removal announced it already
        return []
    await forget_member_second_factor(gateway, merchant_id, target["id"])
    fate = "revoked" if choice == REVOKE_KEYS else "kept"
    await announce_security_event(gateway, merchant_id, "member_removed", {
        "member": target["email"], "role": target["role"], "api_keys": f"{len(keys)} {fate}"})
    await _announce_keys(gateway, merchant_id, target["email"], choice, keys)
    return keys


async def _announce_keys(gateway: Any, merchant_id: str, email: str, choice: str, keys: list[dict[str, Any]]) -> None:
    """Each revoked key in the activity log, or the keys kept (one line), by whoever removed the member."""
    if choice == REVOKE_KEYS:
        for key in keys:
            await announce_security_event(gateway, merchant_id, "api_key_revoked", {
                "key_id": key["id"], "label": key["label"], "reason": f"issued by removed member {email}"})
    elif keys:
        await announce_security_event(gateway, merchant_id, "member_keys_kept", {
            "member": email, "keys": " ".join(key["id"] for key in keys), "count": len(keys)})
