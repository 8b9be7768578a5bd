"""The second factor of every sign-in: a person with 2FA on gives a code before a session exists (issue 42).

One path for the account holder and team members alike, whatever proved
the first factor (the password on the JSON API or the page, an identity
provider, a plugin's own client such as the mini-app):
``second_factor_due`` says whether the person owes a code, and
``check_sign_in_code`` takes a fresh TOTP code of theirs or one of their
recovery codes (sign-in only: a transfer takes the TOTP code alone). A
missing code is 401 ``totp_required`` (so a client knows to ask), a wrong
one 401 ``totp_invalid``; both counted by the person's TOTP lockout of the
channel asking (429 while it runs). The activity log hears of each step:
the factor used rides on the ``sign_in`` event, a refused code is
``second_factor_refused``, a spent recovery code ``recovery_code_used``
(an alert, with how many are left).

SPEC asks the code for transfers and leaves sign-in to us: asking it here
is a deliberate difference (docs/api.md).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from . import auth, lockout, recovery_codes, security_events
from .second_factor import TABLE as MEMBER_TABLE
from .second_factor import invalid_code, member_totp_enabled
from .totp_codes import check_stored_code
from ..types.errors import Unauthorized
from ..contract.gateway import PluginGateway as Gateway

TOTP = "totp"
RECOVERY_CODE = "recovery_code"


class SecondFactorDue(NamedTuple):
    """A person who proved their first factor and owes their own code: the holder (``member_id`` None)
    or a team member of ``merchant_id``."""

    merchant_id: str
    member_id: str | None
    email: str

    @property
    def owner(self) -> str:
        """Whose secret, recovery codes and lockout: the member's id, or the merchant's for the holder."""
        return self.member_id or self.merchant_id

    @property
    def actor(self) -> str | None:
        return None if self.member_id is None else f"member {self.email}"


class SecondFactorRequired(Unauthorized):
    """401 ``totp_required``: the first factor was right and the person's code is still to come."""

    def __init__(self, due: SecondFactorDue) -> None:
        super().__init__("two-factor authentication is on: give the 6-digit code from your authenticator app,"
                         " or one of your recovery codes (totp_code)", code="totp_required")
        self.due = due


async def second_factor_due(gateway: "Gateway", merchant_id: str, member_id: str | None,
                            email: str) -> SecondFactorDue | None:
    """The person's pending code when their own 2FA is on, else None (they sign in on the first factor)."""
    if member_id is not None:
        on = await member_totp_enabled(gateway.db, merchant_id, member_id)
    else:
        on = bool(await gateway.db.fetch_val("SELECT totp_enabled FROM merchants WHERE id = :id", {"id": merchant_id}))
    return SecondFactorDue(merchant_id, member_id, email) if on else None


def _missing(code: Any) -> bool:
    return code is None or (isinstance(code, str) and not code.strip())


async def check_sign_in_code(gateway: "Gateway", due: SecondFactorDue, code: Any, *, method: str,
                             channel: str = lockout.DASHBOARD_CHANNEL) -> str:
    """Which factor ``code`` proved (``"totp"`` or ``"recovery_code"``) for ``due``'s person.

    Raises 401 ``totp_required`` without a code (nothing counted), 401
    ``totp_invalid`` for a wrong, used or malformed one, 429 while the
    person's TOTP lockout of ``channel`` runs. ``method`` (how the first
    factor was proved) goes into the events announced.
    """
    if _missing(code):
        raise SecondFactorRequired(due)
    db, now = gateway.db, gateway.now()
    table = "merchants" if due.member_id is None else MEMBER_TABLE
    factor, recovery = TOTP, None
    if auth.normalize_totp_code(code) is not None:
        ok = await check_stored_code(db, table, due.owner, code, now=now, channel=channel)
    else:
        factor, recovery = RECOVERY_CODE, recovery_codes.normalize(code)
        ok = recovery is not None and await recovery_codes.spend(db, due.owner, recovery, now=now, channel=channel)
    if not ok:
        await security_events.announce(gateway, due.merchant_id, security_events.SECOND_FACTOR_REFUSED,
                                       {"method": method}, actor=due.actor)
        raise invalid_code()
    if factor == RECOVERY_CODE:
        await security_events.announce(gateway, due.merchant_id, security_events.RECOVERY_CODE_USED, {
            "method": method, "remaining": await recovery_codes.remaining(db, due.owner)}, alert=True,
            actor=due.actor)
    return factor
