"""Team members who sign in through the provider: who they are now, and the 2FA due after the provider.

A member signs in through the provider only with an identity linked to
them (``linking.py``): one they linked while signed in, or the one they
proved their invited address with when they joined. Who the member is now
is asked of the teams plugin through ``decide_member`` on every use: a
removed member's identity is refused (403 ``member_removed``), and the core
already refuses their sessions.

A member with their own 2FA on gets no session from the provider alone:
:func:`member_session` answers :class:`SecondFactorDue` and the callback
sends the browser to the code step (``second_step.py``), as the password
sign-in asks the same code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...api import AccountSession, Member, MemberRemoved, SecondFactorDue, sign_in_member
from ...api.merchant import member_totp_enabled

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

METHOD = "identity_provider"



async def current_member(gateway: "Gateway", merchant_id: str, member_id: str) -> Member | None:
    """The member as the teams plugin answers now; None once removed (or without a teams plugin)."""
    return await gateway.hooks.decide_member(merchant_id=merchant_id, member_id=member_id)


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
