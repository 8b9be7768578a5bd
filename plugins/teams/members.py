"""Members of an account: who they are, their role, changing it and removing them, with the owner rules.

The account holder (the e-mail the account was opened with) is its first
owner and stays one: their credentials are the account's own, so they
cannot be removed or demoted, and an account therefore always keeps an
owner. Members with the owner role are owners too; only an owner may make
someone an owner or change or remove an owner. Removing a member deletes
their row: ``decide_member`` then answers None and every session they hold
is refused at its next request (dashboard and JSON API alike).
"""

from __future__ import annotations

from typing import Any

from ...api import (
    Forbidden, Member, MemberLogin, Principal, ValidationError, announce_security_event, forget_member_second_factor,
    merchant_row, update_row,
)
from . import policy, roles

HOLDER_ID = "holder"  # the account holder's entry in the members list (not a row)


async def member(gateway: Any, merchant_id: str, member_id: str) -> Member | None:
    """The member as a session acts: None when removed (or their custom role deleted)."""
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
    await announce_security_event(gateway, merchant_id, "member_role_changed",
                                  {"member": target["email"], "role_was": target["role"], "role": role})


async def remove(gateway: Any, merchant_id: str, member_id: Any, principal: Principal | None) -> None:
    target = await _target(gateway, merchant_id, member_id)
    await _require_owner_for(gateway, principal, target["role"])
    deleted = await gateway.db.execute(
        "DELETE FROM team_members WHERE id = :id AND merchant_id = :m RETURNING id",
        {"id": target["id"], "m": merchant_id})
    if deleted is not None:  # a concurrent removal announced it already
        await forget_member_second_factor(gateway, merchant_id, target["id"])
        await announce_security_event(gateway, merchant_id, "member_removed",
                                      {"member": target["email"], "role": target["role"]})
