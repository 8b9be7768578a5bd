"""Linking a provider identity to the person who proved it is theirs: the only way an identity joins a sign-in.

An identity (issuer, subject) signs in to what it is linked to, and nothing
else (``identities.py``): no e-mail, verified or not, ever attaches it to
someone else's sign-in (issue 42). A link is made only by the person it
signs in as, in their own browser:

* signed in, from Settings -> Sign-in or ``POST /dashboard/auth/google/link``
  (:func:`target_for`): a team member, or the account holder after
  re-entering their password (or a TOTP code when 2FA is on), as every
  binding to the account asks;
* when a new account is made through the provider (``identities.py``);
* when an invited person joins by proving their address through the
  provider (``proofs.py``).

A link row names the member (``member_id``) or, NULL, the holder. An
identity linked to anyone else (the holder, a live member) is not taken
over (409 ``identity_linked``), except a link left by a removed member.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Mapping

from ...api import (
    AccountSession, Conflict, MemberRemoved, Principal, SecondFactorDue, announce_security_event,
    confirm_account_holder, sign_in_account,
)
from .logins import LinkTarget
from .members import current_member, member_session
from .provider import Identity

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger("orbchain.plugins.oidc")


class LinkedElsewhere(Conflict):
    def __init__(self) -> None:
        super().__init__("this identity-provider account is already linked to another Orbchain sign-in, so"
                         " nothing was linked. Link another identity-provider account", code="identity_linked")


async def target_for(gateway: "Gateway", principal: Principal, answers: Mapping[str, Any]) -> LinkTarget:
    """Whom the signed-in ``principal``'s link is for (the JSON route and the Sign-in tab both ask here).

    The account holder first proves it is them again (``answers``' ``password``, or ``totp_code`` with 2FA
    on: 400 missing, 401 wrong, 429 locked): an identity linked to the holder signs in with every power of
    the account, for good, whoever got hold of the session.
    """
    if principal.member_id is None:
        await confirm_account_holder(gateway, principal.merchant_id, password=answers.get("password"),
                                     totp_code=answers.get("totp_code"))
    return LinkTarget(principal.merchant_id, principal.member_id)


async def linked_to(gateway: "Gateway", identity: Identity) -> Any:
    """The link row of ``identity`` (merchant_id, member_id), or None."""
    return await gateway.db.fetch_one(
        "SELECT merchant_id, member_id FROM oidc_identities WHERE issuer = :i AND subject = :s",
        {"i": identity.issuer, "s": identity.subject})


async def left_behind(gateway: "Gateway", row: Any) -> bool:
    """Whether a link row was a member's who has been removed since: anyone may link that identity again."""
    return row["member_id"] is not None and await current_member(gateway, row["merchant_id"],
                                                                 row["member_id"]) is None


async def attach(gateway: "Gateway", identity: Identity, target: LinkTarget, email: str) -> None:
    """Link ``identity`` to ``target``; 409 ``identity_linked`` when it is someone else's live link."""
    params = {"i": identity.issuer, "s": identity.subject, "m": target.merchant_id, "mbr": target.member_id,
              "e": identity.email or email, "now": gateway.now()}
    row = await linked_to(gateway, identity)
    if row is None:
        await gateway.db.execute(
            "INSERT INTO oidc_identities (issuer, subject, merchant_id, member_id, email, created_at, last_sign_in_at)"
            " VALUES (:i, :s, :m, :mbr, :e, :now, :now) ON CONFLICT (issuer, subject) DO NOTHING", params)
        row = await linked_to(gateway, identity)  # a concurrent link may have won
    elif (row["merchant_id"], row["member_id"]) != tuple(target) and await left_behind(gateway, row):
        await gateway.db.execute(
            "UPDATE oidc_identities SET merchant_id = :m, member_id = :mbr, email = :e, last_sign_in_at = :now"
            " WHERE issuer = :i AND subject = :s", params)
        row = await linked_to(gateway, identity)
    if row is None or (row["merchant_id"], row["member_id"]) != tuple(target):
        raise LinkedElsewhere()


async def link(gateway: "Gateway", identity: Identity, target: LinkTarget) -> AccountSession | SecondFactorDue:
    """Link ``identity`` to ``target`` (announced), then sign them in as themselves."""
    if target.member_id is None:
        await attach(gateway, identity, target, "")
        await announce_security_event(gateway, target.merchant_id, "identity_linked", {"issuer": identity.issuer})
        log.info("identity-provider identity linked to the holder of merchant %s", target.merchant_id)
        return await sign_in_account(gateway, target.merchant_id)  # refuses a disabled account
    member = await current_member(gateway, target.merchant_id, target.member_id)
    if member is None:
        raise MemberRemoved()
    await attach(gateway, identity, target, member.email)
    await announce_security_event(gateway, target.merchant_id, "member_identity_linked",
                                  {"member": member.email, "issuer": identity.issuer})
    log.info("identity-provider identity linked to member %s of merchant %s", target.member_id, target.merchant_id)
    return await member_session(gateway, target.merchant_id, target.member_id, member.email)
