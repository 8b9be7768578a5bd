"""Invitations: who is invited, with which role, and the two links of an invitation.

Seeing an invitation is not joining it (issue 42). An invitation has:

* its page (``token_hash``): a link the inviter may see and pass on; it
  shows the invitation and lets the invited person prove their address
  through an identity provider (``decide_address_prover``), nothing more;
* its join link (``mail_hash``): mailed to the invited address only
  (``mail.py``), never shown to the inviter; holding it proves the mailbox,
  so it joins with a password of the person's choosing (``joining.py``).
  Sending it again makes a new one (the old one stops working), at most
  ``MAX_MAILS`` times.

Both tokens are 32 random bytes shown once; only their SHA-256 is stored.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from typing import Any, NamedTuple

from ...api import (
    AddressProver, Conflict, Field, Gone, NotConfigured, NotFound, Principal, ValidationError, account_by_email,
    announce_security_event, insert_statement, validate,
)
from ...api.merchant import get_merchant
from . import mail, members, roles
from .settings import settings_of

ACCEPT_PATH = "/app/team/accept"
MAX_MAILS = 5
_TOKEN = re.compile(r"[A-Za-z0-9_-]{20,64}")


class Invitation(NamedTuple):
    """A new invitation: its row id, the invited address and role, and its page's link (to show once)."""

    id: str
    email: str
    role: str
    page_link: str


class Found(NamedTuple):
    """An invitation a link named, and whether that link was the mailed one (which proves the address)."""

    invite: dict[str, Any]
    by_mail: bool


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def link(gateway: Any, token: str) -> str:
    return f"{gateway.config.base_url.rstrip('/')}{ACCEPT_PATH}?token={token}"


async def address_prover(gateway: Any) -> AddressProver | None:
    """The identity provider that can prove an invited address, if one is configured."""
    return await gateway.hooks.decide_address_prover()


async def address_in_use(gateway: Any, email: str) -> bool:
    """Whether ``email`` signs in already, as an account holder or a member: an address is one sign-in."""
    return await account_by_email(gateway, email) is not None or await gateway.db.fetch_val(
        "SELECT id FROM team_members WHERE email = :e", {"e": email}) is not None


async def create(gateway: Any, merchant_id: str, form: Any, principal: Principal | None) -> Invitation:
    """Invite ``form``'s e-mail with ``form``'s role. 400 naming the field, 409 taken, 503 no way to prove it."""
    clean = validate(dict(form), [Field("email", required=True, max_len=254, kind="email"),
                                  Field("role", required=True, max_len=40)])
    email = clean["email"].strip().lower()
    role = await roles.check_role(gateway, merchant_id, clean["role"])
    if role == roles.OWNER and await members.acting_role(gateway, principal) != roles.OWNER:
        raise ValidationError({"role": "only an owner may invite an owner"})
    if not mail.can_mail(gateway) and await address_prover(gateway) is None:
        raise NotConfigured("invitations need a mail server ([plugin.teams] smtp_host) or an identity provider"
                            " ([plugin.oidc]) on this server, so that the invited person can prove their address",
                            code="not_configured")
    if await address_in_use(gateway, email):
        raise Conflict("this e-mail already signs in to an Orbchain account; invite another address")
    token = secrets.token_urlsafe(32)
    now = gateway.now()
    row = {"id": "inv_" + secrets.token_hex(8), "merchant_id": merchant_id, "email": email, "role": role,
           "token_hash": digest(token), "invited_by": principal.actor if principal is not None else None,
           "expires_at": now + settings_of(gateway).invite_seconds, "accepted_at": None, "created_at": now}
    await gateway.db.execute(insert_statement("team_invites", row), row)
    await announce_security_event(gateway, merchant_id, "member_invited", {"member": email, "role": role})
    return Invitation(row["id"], email, role, link(gateway, token))


async def send_join_link(gateway: Any, merchant_id: str, invite_id: Any,
                         principal: Principal | None) -> tuple[str, mail.Delivery]:
    """Mail a new join link for a pending invitation (the previous one stops working): to whom, and how it went.

    404 for no such pending invitation, 409 ``invite_mail_limit`` after
    ``MAX_MAILS`` sends, 503 when this server cannot mail.
    """
    if not isinstance(invite_id, str) or len(invite_id) > 40:
        raise ValidationError({"invite_id": "must name an invitation of this account"})
    if not mail.can_mail(gateway):
        raise NotConfigured("this server has no mail server ([plugin.teams] smtp_host)", code="not_configured")
    token = secrets.token_urlsafe(32)
    params = {"h": digest(token), "id": invite_id, "m": merchant_id, "now": gateway.now(), "max": MAX_MAILS}
    row = await gateway.db.fetch_one(
        "UPDATE team_invites SET mail_hash = :h, mails_sent = mails_sent + 1 WHERE id = :id AND merchant_id = :m"
        " AND accepted_at IS NULL AND expires_at > :now AND mails_sent < :max RETURNING email, role, mails_sent",
        params)
    if row is None:
        if await gateway.db.fetch_val("SELECT mails_sent FROM team_invites WHERE id = :id AND merchant_id = :m"
                                      " AND accepted_at IS NULL AND expires_at > :now", params) is not None:
            raise Conflict(f"this invitation was e-mailed {MAX_MAILS} times already: cancel it and invite again",
                           code="invite_mail_limit")
        raise NotFound("no such pending invitation")
    if int(row["mails_sent"]) > 1:
        await announce_security_event(gateway, merchant_id, "member_invite_resent",
                                      {"member": row["email"], "role": row["role"]})
    holder = await get_merchant(gateway.db, merchant_id)
    return row["email"], await mail.deliver(gateway, mail.JoinMessage(
        to=row["email"], url=link(gateway, token), account=holder["email"] if holder is not None else "",
        inviter=_inviter(principal, holder["email"] if holder is not None else ""),
        role=row["role"]))


def _inviter(principal: Principal | None, holder_email: str) -> str:
    """Who invites, as the invited person reads it: a member by their e-mail, else the account holder."""
    if principal is not None and principal.member_email:
        return f"{principal.member_email}, a member of the account,"
    return holder_email or "The account holder"


async def pending(gateway: Any, merchant_id: str) -> list[dict[str, Any]]:
    """Invitations not accepted and not expired, newest first."""
    return await gateway.db.fetch_all(
        "SELECT id, email, role, mails_sent, expires_at, created_at FROM team_invites WHERE merchant_id = :m"
        " AND accepted_at IS NULL AND expires_at > :now ORDER BY created_at DESC, id DESC",
        {"m": merchant_id, "now": gateway.now()})


async def cancel(gateway: Any, merchant_id: str, invite_id: Any) -> None:
    if not isinstance(invite_id, str) or len(invite_id) > 40:
        raise ValidationError({"invite_id": "must name an invitation of this account"})
    gone = await gateway.db.execute("DELETE FROM team_invites WHERE id = :id AND merchant_id = :m"
                                    " AND accepted_at IS NULL RETURNING id", {"id": invite_id, "m": merchant_id})
    if gone is None:
        raise NotFound("no such pending invitation")


def still_open(gateway: Any, row: Any) -> dict[str, Any]:
    """``row`` if it can still be accepted: 404 none, 410 used or expired."""
    if row is None:
        raise NotFound("this invitation link is not valid: ask for a new one", code="invite_invalid")
    if row["accepted_at"] is not None:
        raise Gone("this invitation was used already: sign in, or ask for a new one", code="invite_used")
    if int(row["expires_at"]) <= gateway.now():
        raise Gone("this invitation has expired: ask for a new one", code="invite_expired")
    return dict(row)


async def find(gateway: Any, token: Any) -> Found:
    """The invitation a link's token names (its page or its mailed join link): 404 unknown, 410 used or expired."""
    row, by_mail = None, False
    if isinstance(token, str) and _TOKEN.fullmatch(token):
        hashed = digest(token)
        row = await gateway.db.fetch_one("SELECT * FROM team_invites WHERE token_hash = :h OR mail_hash = :h",
                                         {"h": hashed})
        by_mail = row is not None and row["mail_hash"] == hashed
    return Found(still_open(gateway, row), by_mail)
