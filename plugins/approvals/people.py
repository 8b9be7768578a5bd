"""Requesters and approvers as people read them: "account holder", a member's e-mail, and the key they used."""

from __future__ import annotations

from typing import Any

from ...api import describe_person


async def label(gateway: Any, merchant_id: str, who: str | None, key_id: str | None = None) -> str:
    """``who`` (``requested_by``) for people to read, with the key they used when there was one."""
    person = await _person(gateway, merchant_id, who)
    return f"{person} with key {key_id}" if key_id else person


async def _person(gateway: Any, merchant_id: str, who: str | None) -> str:
    if who is None:
        return "a job (schedule, auto-withdraw, plugin)"
    return await describe_person(gateway, merchant_id, who)
