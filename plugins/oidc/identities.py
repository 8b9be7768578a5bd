"""Which sign-in a provider's person is: only the one their identity is linked to (issue 42).

1. An identity (issuer, subject) linked before signs in to what it is linked
   to, whatever e-mail the provider reports today: the account holder, or
   the team member who linked it (``linking.py``), refused once they are
   removed.
2. Otherwise the provider must say the e-mail is verified
   (``email_verified`` true); an unverified or missing e-mail neither signs
   in nor creates an account.
3. A verified e-mail that already signs in here (an account holder's, or a
   team member's: ``decide_member_login``) is refused (409
   ``identity_not_linked``) and links nothing. Nobody proved that address
   when it was registered (a password sign-up, or an invitation before
   issue 42), so matching by it would hand the address's owner to whoever
   registered it: their provider sign-in would land in that person's
   account. The person who signs in with that address links their provider
   account themselves, signed in (Settings -> Sign-in).
4. A verified e-mail that signs in nowhere creates an account (without a
   password) and links the identity; only then are API keys returned. In
   maintenance mode no account is created (503), as for sign-up.

A disabled account is refused at every step (403 ``merchant_disabled``). A
member with their own 2FA on gets ``SecondFactorDue`` instead of a session:
the callback asks for their code first. Accounts are read and created only
through ``orbchain.api``; this module's SQL touches the plugin's table.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ...api import (
    AccountSession, Conflict, Forbidden, SecondFactorDue, account_by_email, create_account,
    refuse_in_maintenance, sign_in_account,
)
from .linking import attach, linked_to
from .logins import LinkTarget
from .members import linked_member
from .provider import Identity

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger("orbchain.plugins.oidc")


class EmailNotVerified(Forbidden):
    def __init__(self) -> None:
        super().__init__("the identity provider has not verified this e-mail address", code="email_not_verified")


class NotLinked(Conflict):
    def __init__(self) -> None:
        super().__init__("this e-mail already signs in to Orbchain with a password, and your identity-provider"
                         " account is not linked to that sign-in, so nothing happened. Sign in with the e-mail and"
                         " password, then link your identity-provider account under Settings, Sign-in. If you"
                         " never registered here, the server's operator can remove that registration",
                         code="identity_not_linked")


async def _touch(gateway: "Gateway", identity: Identity) -> None:
    await gateway.db.execute(
        "UPDATE oidc_identities SET last_sign_in_at = :now, email = COALESCE(:e, email)"
        " WHERE issuer = :i AND subject = :s",
        {"now": gateway.now(), "e": identity.email, "i": identity.issuer, "s": identity.subject})


async def _linked_session(gateway: "Gateway", identity: Identity, linked: Any) -> AccountSession | SecondFactorDue:
    if linked["member_id"] is not None:
        session: AccountSession | SecondFactorDue = await linked_member(gateway, linked["merchant_id"],
                                                                       linked["member_id"])
    else:
        session = await sign_in_account(gateway, linked["merchant_id"])
    await _touch(gateway, identity)
    return session


def verified_email(identity: Identity) -> str:
    """The identity's e-mail, lower-cased, when the provider verified it; 403 ``email_not_verified`` otherwise."""
    if not identity.email or not identity.email_verified:
        raise EmailNotVerified()
    return identity.email.lower()


async def sign_in(gateway: "Gateway", identity: Identity) -> AccountSession | SecondFactorDue:
    """The session for ``identity`` under the rules above; raises 403 or 409 when refused."""
    linked = await linked_to(gateway, identity)
    if linked is not None:
        return await _linked_session(gateway, identity, linked)
    email = verified_email(identity)
    if await account_by_email(gateway, email) is not None or (
            await gateway.hooks.decide_member_login(email=email) is not None):
        raise NotLinked()
    refuse_in_maintenance(gateway)  # like POST /dashboard/auth/signup; signing in to an account still works
    try:
        session = await create_account(gateway, email)
    except Conflict:  # registered a moment ago: by another sign-in of this identity (then linked), or not ours
        linked = await linked_to(gateway, identity)
        if linked is None:
            raise NotLinked() from None
        return await _linked_session(gateway, identity, linked)
    await attach(gateway, identity, LinkTarget(session.merchant_id, None), session.email)
    log.info("merchant %s created through identity-provider sign-in", session.merchant_id)
    return session
