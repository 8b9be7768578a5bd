"""Joining an account: a membership starts only once the invited address is proven (issue 42).

Two proofs, each completed by the invited person in their own browser:

* the join link mailed to the address (``invites.send_join_link``): its
  holder chooses a password (:func:`join_with_password`);
* an identity provider that vouches for that very address
  (``decide_proven_address``, :func:`join_with_proof`): the member signs in
  through that identity only (no password), which the provider links.

The invitation's page link, which the inviter may hold, proves nothing and
joins nobody. An address is one sign-in: if it signs in anywhere by the
time it joins (its owner opened an account meanwhile), the join is refused
and nothing changes. Accepting sets ``accepted_at`` with a conditional
UPDATE (still unused, not expired) in the transaction that creates the
member, so two tabs make one member and the other is told the link was used.
"""

from __future__ import annotations

import secrets
from typing import Any

from ...api import (
    Conflict, Field, Forbidden, Gone, Member, ProvenAddress, ValidationError, announce_security_event,
    cache_changed_everywhere, hash_password, insert_statement, is_unique_violation,
)
from ...api.merchant import validate_with_passwords
from . import invites, members

PURPOSE = "team_invite"  # what this plugin asks an identity provider to prove an address for
BY_MAIL, BY_IDENTITY_PROVIDER = "mail", "identity_provider"
_PROVEN_WORDS = {BY_MAIL: "the link e-mailed to the address", BY_IDENTITY_PROVIDER: "the identity provider"}


class ProofRequired(Forbidden):
    def __init__(self, email: str) -> None:
        super().__init__(f"this link shows the invitation but does not join it: open the link e-mailed to {email},"
                         " or continue with the identity provider as that address. Nothing was changed",
                         code="proof_required")


class AddressTaken(Conflict):
    def __init__(self) -> None:
        super().__init__("this address already signs in to an Orbchain account, and an address signs in to one"
                         " place only: nothing was changed. Ask for an invitation to another address",
                         code="address_in_use")


async def join_with_password(gateway: Any, form: Any) -> str:
    """Join through the mailed link in ``form`` with the chosen password; the member's e-mail (to sign in with).

    403 ``proof_required`` for the invitation's page link, which the inviter may hold.
    """
    found = await invites.find(gateway, form.get("token"))
    if not found.by_mail:
        await _refused(gateway, found.invite, {"reason": "the invitation's page link, not the mailed link"})
        raise ProofRequired(found.invite["email"])
    clean = validate_with_passwords(dict(form), [Field("token", required=True, max_len=100)], {"password": True})
    if form.get("password") != form.get("password_confirm"):
        raise ValidationError({"password_confirm": "does not match the password"})
    await _join(gateway, found.invite, await hash_password(gateway, clean["password"]), BY_MAIL)
    return str(found.invite["email"])


async def join_with_proof(gateway: Any, invite_id: str, address: ProvenAddress) -> Member:
    """Join the invitation ``invite_id`` as ``address``, which an identity provider just proved; the new member.

    403 ``address_mismatch`` (announced) when the provider vouched for
    another address than the invited one: the inviter signing in as
    themselves cannot complete someone else's invitation.
    """
    invite = invites.still_open(gateway, await gateway.db.fetch_one(
        "SELECT * FROM team_invites WHERE id = :id", {"id": invite_id}))
    if address.email != invite["email"]:
        await _refused(gateway, invite, {"reason": f"the identity provider vouched for {address.email}"})
        raise Forbidden(f"the identity provider signed you in as {address.email}, but this invitation is for"
                        f" {invite['email']}: sign in there as {invite['email']}. Nothing was changed",
                        code="address_mismatch")
    # No password: this member signs in through the identity they proved the address with. A fresh random
    # one keeps the password sign-in's timing and answer ("invalid credentials") the same as for anyone.
    unusable = await hash_password(gateway, secrets.token_urlsafe(32))
    member_id = await _join(gateway, invite, unusable, BY_IDENTITY_PROVIDER)
    member = await members.member(gateway, invite["merchant_id"], member_id)
    if member is None:  # removed between the commit and here
        raise Gone("this membership was removed a moment ago", code="member_removed")
    return member


async def _refused(gateway: Any, invite: dict[str, Any], details: dict[str, str]) -> None:
    """Tell the account's activity log that someone tried to join as the invited address without proving it."""
    await announce_security_event(gateway, invite["merchant_id"], "member_join_refused",
                                  {"member": invite["email"], "role": invite["role"], **details})


async def _join(gateway: Any, invite: dict[str, Any], password_hash: str, proven_by: str) -> str:
    """Spend the invitation and create its member in one transaction; the member's id."""
    now = gateway.now()
    db = gateway.db
    member_id = "mbr_" + secrets.token_hex(10)
    try:
        async with db.transaction():
            claimed = await db.execute(
                "UPDATE team_invites SET accepted_at = :now WHERE id = :id AND accepted_at IS NULL"
                " AND expires_at > :now RETURNING id", {"now": now, "id": invite["id"]})
            if claimed is None:
                raise Gone("this invitation was used already: sign in, or ask for a new one", code="invite_used")
            if await invites.address_in_use(gateway, invite["email"]):
                raise AddressTaken()
            row = {"id": member_id, "merchant_id": invite["merchant_id"], "email": invite["email"],
                   "role": invite["role"], "password_hash": password_hash, "invited_by": invite["invited_by"],
                   "created_at": now, "proven_by": proven_by}
            await db.execute(insert_statement("team_members", row), row)
    except Exception as exc:
        if is_unique_violation(exc):
            raise AddressTaken() from None
        raise
    await cache_changed_everywhere(gateway)  # the new member's id may have been cached as unknown
    await announce_security_event(gateway, invite["merchant_id"], "member_joined", {
        "member": invite["email"], "role": invite["role"], "proven_by": _PROVEN_WORDS[proven_by]})
    return member_id
