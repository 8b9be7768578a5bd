"""The team-wide "members must have 2FA" rule: members without their own second factor may only read.

Applied where a member's scopes are worked out (``members.member``, on every
request), so turning it on limits every member without 2FA at their next
click, and setting up 2FA on their Security page lifts it at once. Only an
owner turns it on or off.
"""

from __future__ import annotations

from typing import Any

from ...api import announce_security_event, cache_changed_everywhere
from ...api.merchant import member_totp_enabled
from . import roles


async def requires_2fa(gateway: Any, merchant_id: str) -> bool:
    row = await gateway.db.fetch_one("SELECT require_2fa FROM team_policy WHERE merchant_id = :m", {"m": merchant_id})
    return row is not None and bool(row["require_2fa"])


async def limit(gateway: Any, merchant_id: str, member_id: str, scopes: frozenset[str]) -> frozenset[str]:
    """``scopes``, or only their reads while the rule is on and the member has no 2FA of their own."""
    if await requires_2fa(gateway, merchant_id) and not await member_totp_enabled(gateway.db, merchant_id, member_id):
        return scopes & frozenset(roles.READ)
    return scopes


async def set_require_2fa(gateway: Any, merchant_id: str, on: bool) -> None:
    """Turn the rule on or off (the caller checked the owner); announced once per actual change."""
    params = {"m": merchant_id, "on": bool(on), "now": gateway.now()}
    if on:
        changed = await gateway.db.execute(
            "INSERT INTO team_policy (merchant_id, require_2fa, updated_at) VALUES (:m, :on, :now)"
            " ON CONFLICT (merchant_id) DO UPDATE SET require_2fa = excluded.require_2fa,"
            " updated_at = excluded.updated_at WHERE team_policy.require_2fa <> excluded.require_2fa"
            " RETURNING merchant_id", params)
    else:
        changed = await gateway.db.execute(
            "UPDATE team_policy SET require_2fa = :on, updated_at = :now WHERE merchant_id = :m"
            " AND require_2fa <> :on RETURNING merchant_id", params)
    if changed is not None:
        await cache_changed_everywhere(gateway)  # members' permissions follow the rule at their next request
        await announce_security_event(gateway, merchant_id, "team_2fa_required" if on else "team_2fa_optional", {})
