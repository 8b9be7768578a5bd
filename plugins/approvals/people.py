"""Requesters and approvers as people read them: "account holder", a member's e-mail, "key <id>"."""

from __future__ import annotations

from typing import Any

from ...api import call_first

HOLDER = "holder"


async def label(gateway: Any, merchant_id: str, who: str | None) -> str:
    if who is None:
        return "a job (schedule, auto-withdraw, plugin)"
    if who == HOLDER:
        return "account holder"
    kind, _, ident = who.partition(":")
    if kind == "member":
        member = await call_first(gateway.pm, "decide_member", gateway=gateway, merchant_id=merchant_id,
                                  member_id=ident)
        return f"member {member.email}" if member is not None else "a removed member"
    return f"key {ident}"
