"""Team members and their linked identities: linking one, signing in as the member, the 2FA due after.

A signed-in member links the provider identity they sign in with
(``POST /dashboard/auth/google/link`` starts a sign-in marked with their
account and member id; the callback calls :func:`link`). The link row
carries ``member_id``, so that identity later signs in as the member, never
as the account holder. Who the member is now is asked of the teams plugin
through ``decide_member`` on every use: a removed member's identity is
refused (403 ``member_removed``), and the core already refuses their
sessions. An identity linked to anyone else (the holder, another member)
is not taken over (409 ``identity_linked``), except a link left by a
removed member.

A member with their own 2FA on gets no session from the provider alone:
:func:`member_session` answers :class:`SecondFactorDue` and the callback
sends the browser to the code step (``second_step.py``), as the password
sign-in asks the same code.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ...api import (
    AccountSession, Conflict, Forbidden, Member, Principal, SecondFactorDue, announce_security_event, call_first,
    sign_in_member,
)
from ...api.merchant import member_totp_enabled
from .logins import MemberLink
from .provider import Identity

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger("orbchain.plugins.oidc")
METHOD = "identity_provider"


class MemberRemoved(Forbidden):
    def __init__(self) -> None:
        super().__init__("the team member this sign-in belongs to was removed from the account, so it no longer"
                         " signs in. Ask the account's owner for a new invitation", code="member_removed")


def link_for(principal: Principal) -> MemberLink:
    """What a signed-in member's link is marked with; 403 ``not_a_member`` for the account holder, whose
    identity links by its verified e-mail (the JSON route and the dashboard tab both ask here)."""
    if principal.member_id is None:
        raise Forbidden("this links a team member's own identity-provider account; the account holder's links"
                        " by its verified e-mail when signing in at /dashboard/auth/google", code="not_a_member")
    return MemberLink(principal.merchant_id, principal.member_id)


class LinkedElsewhere(Conflict):
    def __init__(self) -> None:
        super().__init__("this identity-provider account is already linked to another Orbchain sign-in, so"
                         " nothing was linked. Link another identity-provider account", code="identity_linked")


async def current_member(gateway: "Gateway", merchant_id: str, member_id: str) -> Member | None:
    """The member as the teams plugin answers now; None once removed (or without a teams plugin)."""
    return await call_first(gateway.pm, "decide_member", gateway=gateway, merchant_id=merchant_id,
                            member_id=member_id)


async def member_session(gateway: "Gateway", merchant_id: str, member_id: str,
                         email: str) -> AccountSession | SecondFactorDue:
    """The member's session, or :class:`SecondFactorDue` while their own 2FA is on."""
    if await member_totp_enabled(gateway.db, merchant_id, member_id):
        return SecondFactorDue(merchant_id, member_id, email)
    return await sign_in_member(gateway, merchant_id, member_id, email, method=METHOD)


async def linked_member(gateway: "Gateway", merchant_id: str, member_id: str) -> AccountSession | SecondFactorDue:
    """Sign in through an identity linked to a member: 403 ``member_removed`` once they are gone."""
    member = await current_member(gateway, merchant_id, member_id)
    if member is None:
        raise MemberRemoved()
    return await member_session(gateway, merchant_id, member_id, member.email)


async def _owner_of(gateway: "Gateway", identity: Identity) -> Any:
    return await gateway.db.fetch_one(
        "SELECT merchant_id, member_id FROM oidc_identities WHERE issuer = :i AND subject = :s",
        {"i": identity.issuer, "s": identity.subject})


async def _free(gateway: "Gateway", row: Any, link: MemberLink) -> bool:
    """Whether an existing link row may point at ``link``: it is theirs, or its member was removed."""
    if (row["merchant_id"], row["member_id"]) == (link.merchant_id, link.member_id):
        return True
    return row["member_id"] is not None and await current_member(gateway, row["merchant_id"], row["member_id"]) is None


async def link(gateway: "Gateway", identity: Identity, link: MemberLink) -> AccountSession | SecondFactorDue:
    """Link ``identity`` to the member who started this sign-in, then sign them in as that member."""
    member = await current_member(gateway, link.merchant_id, link.member_id)
    if member is None:
        raise MemberRemoved()
    params = {"i": identity.issuer, "s": identity.subject, "m": link.merchant_id, "mbr": link.member_id,
              "e": identity.email or member.email, "now": gateway.now()}
    row = await _owner_of(gateway, identity)
    if row is None:
        await gateway.db.execute(
            "INSERT INTO oidc_identities (issuer, subject, merchant_id, member_id, email, created_at, last_sign_in_at)"
            " VALUES (:i, :s, :m, :mbr, :e, :now, :now) ON CONFLICT (issuer, subject) DO NOTHING", params)
        row = await _owner_of(gateway, identity)  # a concurrent link may have won
    elif await _free(gateway, row, link):
        await gateway.db.execute(
            "UPDATE oidc_identities SET merchant_id = :m, member_id = :mbr, email = :e, last_sign_in_at = :now"
            " WHERE issuer = :i AND subject = :s", params)
        row = await _owner_of(gateway, identity)
    if row is None or (row["merchant_id"], row["member_id"]) != (link.merchant_id, link.member_id):
        raise LinkedElsewhere()
    await announce_security_event(gateway, link.merchant_id, "member_identity_linked",
                                  {"member": member.email, "issuer": identity.issuer})
    log.info("identity-provider identity linked to member %s of merchant %s", link.member_id, link.merchant_id)
    return await member_session(gateway, link.merchant_id, link.member_id, member.email)
