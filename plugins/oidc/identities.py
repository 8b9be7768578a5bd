"""Which merchant a provider's person is: the linking rule.

1. An identity (issuer, subject) linked before signs in to its merchant,
   whatever e-mail the provider reports today; one a team member linked
   (``members.py``) signs in as that member, and is refused once they are
   removed.
2. Otherwise the provider must say the e-mail is verified
   (``email_verified`` true); an unverified or missing e-mail neither links
   nor creates an account.
3. A verified e-mail that belongs to an account links the identity to it.
4. A verified e-mail that is a team member's (``decide_member_login``)
   signs the member in to their account with their role, and links
   nothing (a member links an identity explicitly, signed in).
5. A verified e-mail that belongs to no account creates one (without a
   password) and links the identity; only then are API keys returned.
   In maintenance mode no account is created (503), as for sign-up.

A disabled account is refused at every step (403 ``merchant_disabled``) and
is not linked. A member with their own 2FA on gets ``SecondFactorDue``
instead of a session: the callback asks for their code first. Accounts are read and created only through
``orbchain.api``; this module's SQL touches the plugin's table.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ...api import (
    AccountSession, Conflict, Forbidden, account_by_email, call_first, create_account, refuse_in_maintenance,
    sign_in_account,
)
from .members import SecondFactorDue, linked_member, member_session
from .provider import Identity

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger("orbchain.plugins.oidc")


class EmailNotVerified(Forbidden):
    def __init__(self) -> None:
        super().__init__("the identity provider has not verified this e-mail address", code="email_not_verified")


async def _linked(gateway: "Gateway", identity: Identity) -> Any:
    return await gateway.db.fetch_one(
        "SELECT merchant_id, member_id FROM oidc_identities WHERE issuer = :i AND subject = :s",
        {"i": identity.issuer, "s": identity.subject})


async def _link(gateway: "Gateway", identity: Identity, merchant_id: str, email: str) -> None:
    now = gateway.now()
    await gateway.db.execute(
        "INSERT INTO oidc_identities (issuer, subject, merchant_id, email, created_at, last_sign_in_at)"
        " VALUES (:i, :s, :m, :e, :now, :now) ON CONFLICT (issuer, subject) DO NOTHING",
        {"i": identity.issuer, "s": identity.subject, "m": merchant_id, "e": email, "now": now})


async def _touch(gateway: "Gateway", identity: Identity) -> None:
    await gateway.db.execute(
        "UPDATE oidc_identities SET last_sign_in_at = :now, email = COALESCE(:e, email)"
        " WHERE issuer = :i AND subject = :s",
        {"now": gateway.now(), "e": identity.email, "i": identity.issuer, "s": identity.subject})


async def sign_in(gateway: "Gateway", identity: Identity) -> AccountSession | SecondFactorDue:
    """The session for ``identity`` under the linking rule above; raises 403 when refused."""
    linked = await _linked(gateway, identity)
    if linked is not None:
        if linked["member_id"] is not None:
            session: AccountSession | SecondFactorDue = await linked_member(gateway, linked["merchant_id"],
                                                                           linked["member_id"])
        else:
            session = await sign_in_account(gateway, linked["merchant_id"])
        await _touch(gateway, identity)
        return session
    if not identity.email or not identity.email_verified:
        raise EmailNotVerified()
    account = await account_by_email(gateway, identity.email)
    if account is None:
        member = await call_first(gateway.pm, "decide_member_login", gateway=gateway, email=identity.email.lower())
        if member is not None:
            return await member_session(gateway, member.merchant_id, member.member_id, member.email)
        refuse_in_maintenance(gateway)  # like POST /dashboard/auth/signup; signing in to an account still works
        try:
            session = await create_account(gateway, identity.email)
        except Conflict:  # another sign-in created it a moment ago: link to it instead
            account = await account_by_email(gateway, identity.email)
            if account is None:
                raise
        else:
            await _link(gateway, identity, session.merchant_id, session.email)
            log.info("merchant %s created through identity-provider sign-in", session.merchant_id)
            return session
    session = await sign_in_account(gateway, account.merchant_id)  # refuses a disabled account
    await _link(gateway, identity, account.merchant_id, account.email)
    log.info("identity-provider sign-in linked to merchant %s (verified e-mail)", account.merchant_id)
    return session
