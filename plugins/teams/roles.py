"""Roles: the built-in five mapped onto the gateway's scopes, and an account's custom roles (a set of scopes).

A member's scopes are worked out from their role on every request (never
stored with the member), so changing a role, or a custom role's scopes,
takes effect on the member's next click. ``account:credentials`` (the
holder's own password and 2FA) is never granted: no role can take over the
account holder.
"""

from __future__ import annotations

import json
import secrets
from typing import Any, Iterable, Mapping

from ...api import (Conflict, ValidationError, cache_changed_everywhere, insert_statement, is_unique_violation,
                   merchant_rows)

HOLDER_SCOPE = "account:credentials"
OWNER = "owner"
READ = ("payment:read", "payout:read", "balance:read")
# Built-in roles (order: most to least power). owner and admin hold every scope the gateway knows.
BUILT_IN: Mapping[str, tuple[str, ...] | None] = {
    OWNER: None,
    "admin": None,
    "finance": (*READ, "payout:create", "refund:create", "transfer:create", "swap:create"),
    "developer": (*READ, "payment:create", "key:manage", "webhook:manage", "settings:manage"),
    "viewer": READ,
}
MAX_CUSTOM_ROLES = 20
MAX_ROLE_NAME = 40


def grantable(gateway: Any) -> list[str]:
    """Every scope a role may hold: the gateway's (API-key and members-only), less the holder's own."""
    return [name for name in gateway.scopes.all_names() if name != HOLDER_SCOPE]


def built_in_scopes(gateway: Any, role: str) -> frozenset[str]:
    scopes = BUILT_IN[role]
    known = set(grantable(gateway))
    return frozenset(known if scopes is None else (s for s in scopes if s in known))


async def custom_roles(gateway: Any, merchant_id: str) -> dict[str, frozenset[str]]:
    """The account's custom roles: name -> scopes (of the scopes still registered)."""
    known = set(grantable(gateway))
    return {row["name"]: frozenset(s for s in json.loads(row["scopes"]) if s in known)
            for row in await merchant_rows(gateway, "team_roles", merchant_id)}


async def role_scopes(gateway: Any, merchant_id: str, role: str) -> frozenset[str] | None:
    """What ``role`` grants on this account; None for a role that no longer exists (it then grants nothing)."""
    if role in BUILT_IN:
        return built_in_scopes(gateway, role)
    return (await custom_roles(gateway, merchant_id)).get(role)


async def check_role(gateway: Any, merchant_id: str, role: Any, field: str = "role") -> str:
    """``role`` if it names a built-in or this account's custom role; 400 naming ``field`` otherwise."""
    if isinstance(role, str) and (role in BUILT_IN or role in await custom_roles(gateway, merchant_id)):
        return role
    raise ValidationError({field: "choose one of the roles listed"})


async def create_custom_role(gateway: Any, merchant_id: str, name: Any, scopes: Iterable[Any]) -> str:
    """A new custom role; 400 naming the field for a bad name or scope, 409 for a name in use."""
    errors: dict[str, str] = {}
    name = name.strip().lower() if isinstance(name, str) else ""
    if not name or len(name) > MAX_ROLE_NAME or not all(c.isalnum() or c in "-_ " for c in name) \
            or not name[0].isalpha():
        errors["name"] = f"1 to {MAX_ROLE_NAME} letters, digits, spaces, - or _, starting with a letter"
    elif name in BUILT_IN:
        errors["name"] = "is a built-in role's name"
    chosen = [s for s in scopes if isinstance(s, str)]
    known = set(grantable(gateway))
    if not chosen or any(s not in known for s in chosen):
        errors["scopes"] = "choose at least one of the permissions listed"
    if errors:
        raise ValidationError(errors)
    if len(await custom_roles(gateway, merchant_id)) >= MAX_CUSTOM_ROLES:
        raise ValidationError({"name": f"an account has at most {MAX_CUSTOM_ROLES} custom roles"})
    row = {"id": "role_" + secrets.token_hex(8), "merchant_id": merchant_id, "name": name,
           "scopes": json.dumps(sorted(set(chosen))), "created_at": gateway.now()}
    try:
        await gateway.db.execute(insert_statement("team_roles", row), row)
    except Exception as exc:
        if is_unique_violation(exc):
            raise Conflict(f"a role named {name!r} exists already") from None
        raise
    await cache_changed_everywhere(gateway)  # a member holding a role of that name gains its permissions
    return name
