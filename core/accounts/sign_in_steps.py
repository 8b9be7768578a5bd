"""A sign-in waiting for its code: the page between the first factor and the session (issue 42).

A browser that proved the first factor (the dashboard's password form, an
identity provider's callback) of a person with 2FA on gets no session yet:
the page records the pending sign-in with ``begin_sign_in_step`` and hands
the browser the returned secret in an HttpOnly, SameSite=Strict cookie on
the code page's path (never a URL), and that page calls
``finish_sign_in_step`` with the cookie and the typed code. The table keeps
a SHA-256 of the secret, the person and how they proved the first factor,
and ``context`` (what the page needs back: where to go next, a landing's
browser binding). A wrong code leaves the step in place (the person's TOTP
lockout counts); the right one spends it with ``DELETE ... RETURNING`` (once,
in any worker) and opens the session. One machinery for the holder and
members, for every page that signs people in.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from typing import Any

from . import lockout
from .account_services import AccountSession, open_session
from .sign_in_factor import SecondFactorDue, check_sign_in_code
from ..types.errors import Forbidden, InvalidRequest
from ..contract.gateway import PluginGateway as Gateway

STEP_TTL_SECONDS = 5 * 60
MAX_CONTEXT_LENGTH = 1000
_SECRET = re.compile(r"^[A-Za-z0-9_-]{32,128}$")  # what secrets.token_urlsafe(32) makes


class SignInStepSpent(InvalidRequest):
    """400 ``invalid_state``: no such pending sign-in (unknown, expired, or finished already)."""

    def __init__(self) -> None:
        super().__init__("this sign-in has expired or was finished already; please sign in again",
                         code="invalid_state")


class MemberRemoved(Forbidden):
    def __init__(self) -> None:
        super().__init__("the team member this sign-in belongs to was removed from the account, so it no longer"
                         " signs in. Ask the account's owner for a new invitation", code="member_removed")


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


async def begin_sign_in_step(gateway: "Gateway", due: SecondFactorDue, *, method: str, context: str = "",
                             ttl_seconds: int = STEP_TTL_SECONDS) -> str:
    """Record ``due``'s pending sign-in (first factor ``method``); the secret for the browser's cookie."""
    if not isinstance(context, str) or len(context) > MAX_CONTEXT_LENGTH:
        raise ValueError(f"a sign-in step's context is text of at most {MAX_CONTEXT_LENGTH} characters")
    now, secret = gateway.now(), secrets.token_urlsafe(32)
    await gateway.db.execute("DELETE FROM sign_in_steps WHERE expires_at <= :now", {"now": now})
    await gateway.db.execute(
        "INSERT INTO sign_in_steps (step_hash, merchant_id, member_id, email, method, context, created_at, expires_at)"
        " VALUES (:h, :m, :mbr, :e, :method, :context, :now, :exp)",
        {"h": _hash(secret), "m": due.merchant_id, "mbr": due.member_id, "e": due.email, "method": method,
         "context": context, "now": now, "exp": now + ttl_seconds})
    return secret


async def finish_sign_in_step(gateway: "Gateway", secret: Any, code: Any, *,
                              channel: str = lockout.DASHBOARD_CHANNEL) -> tuple[AccountSession, str]:
    """The session once ``code`` is the person's, and the step's ``context``.

    400 ``invalid_state`` for an unknown, expired or spent step; 403
    ``member_removed`` when the member left the team meanwhile; what
    ``check_sign_in_code`` raises for the code (401 ``totp_required`` or
    ``totp_invalid``, 429 locked), the step then kept for another try.
    """
    if not isinstance(secret, str) or not _SECRET.match(secret):
        raise SignInStepSpent()
    key = _hash(secret)
    row = await gateway.db.fetch_one("SELECT * FROM sign_in_steps WHERE step_hash = :h", {"h": key})
    if row is None or int(row["expires_at"]) <= gateway.now():
        raise SignInStepSpent()
    due = SecondFactorDue(row["merchant_id"], row["member_id"], row["email"])
    if due.member_id is not None and await gateway.hooks.decide_member(merchant_id=due.merchant_id,
                                                                       member_id=due.member_id) is None:
        raise MemberRemoved()
    factor = await check_sign_in_code(gateway, due, code, method=row["method"], channel=channel)
    spent = await gateway.db.fetch_one("DELETE FROM sign_in_steps WHERE step_hash = :h RETURNING step_hash",
                                       {"h": key})
    if spent is None:  # another request finished it a moment ago
        raise SignInStepSpent()
    session = await open_session(gateway, due.merchant_id, due.member_id, due.email, method=row["method"],
                                 second_factor=factor)
    return session, str(row["context"])
