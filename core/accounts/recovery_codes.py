"""Recovery codes: what signs a person in when their authenticator is lost (issue 42).

Ten random codes per person with 2FA on (the account holder or a team
member; ``owner`` is the merchant id or the member id, the same key as their
TOTP secret and lockout). Made when 2FA is turned on and again on request
with a fresh TOTP code (the old set then stops working), shown once, stored
as SHA-256: each code is 80 random bits, so a fast hash is as safe as it is
for API keys and the lookup is one indexed equality. A code is spent by one
conditional UPDATE, so two requests racing with the same code get one
session between them. Every try counts against the owner's TOTP lockout of
the channel asking, before the code is looked up. Accepted only where a
sign-in asks its code (``sign_in_factor``), never for a transfer.
"""

from __future__ import annotations

import hashlib
import secrets

from . import lockout
from ..infra.db import Database

COUNT = 10
_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"  # base32: 5 bits a character
LENGTH = 16  # 80 bits
GROUP = 4  # shown as xxxx-xxxx-xxxx-xxxx


def new_code() -> str:
    body = "".join(secrets.choice(_ALPHABET) for _ in range(LENGTH))
    return "-".join(body[i:i + GROUP] for i in range(0, LENGTH, GROUP))


def normalize(value: object) -> str | None:
    """The 16 characters of a recovery code as typed (any case, spaces or dashes between), or None."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    text = value.strip().lower().replace("-", "").replace(" ", "")
    if len(text) != LENGTH or not all(char in _ALPHABET for char in text):
        return None
    return text


def _digest(normalized: str) -> str:
    return hashlib.sha256(normalized.encode("ascii")).hexdigest()


async def issue(db: Database, merchant_id: str, owner: str, now: int) -> list[str]:
    """A new set for ``owner`` (the old set deleted), in one transaction; the plaintexts, to show once."""
    codes = [new_code() for _ in range(COUNT)]
    async with db.transaction():
        await db.execute("DELETE FROM recovery_codes WHERE owner_id = :o", {"o": owner})
        for code in codes:
            await db.execute(
                "INSERT INTO recovery_codes (code_hash, owner_id, merchant_id, created_at, used_at)"
                " VALUES (:h, :o, :m, :now, NULL)",
                {"h": _digest(normalize(code) or ""), "o": owner, "m": merchant_id, "now": now})
    return codes


async def forget(db: Database, owner: str) -> None:
    """Delete ``owner``'s codes (2FA turned off, a member removed)."""
    await db.execute("DELETE FROM recovery_codes WHERE owner_id = :o", {"o": owner})


async def remaining(db: Database, owner: str) -> int:
    """How many of ``owner``'s codes are still unused."""
    value = await db.fetch_val("SELECT COUNT(*) FROM recovery_codes WHERE owner_id = :o AND used_at IS NULL",
                               {"o": owner})
    return int(value or 0)


async def spend(db: Database, owner: str, code: str, *, now: int,
                channel: str = lockout.DASHBOARD_CHANNEL) -> bool:
    """True when ``code`` (``normalize``d) was one of ``owner``'s unused codes, now spent.

    Counted against ``lockout.totp_policy(channel)`` for ``owner`` before
    the look-up, like a TOTP code: ``LockedOut`` (429) while it runs, and
    a right code forgives the earlier failures.
    """
    policy = lockout.totp_policy(channel)
    locked = await lockout.attempt(db, policy, owner, now)
    if locked:
        raise lockout.LockedOut("too many invalid codes; try again later", locked)
    spent = await db.fetch_one(
        "UPDATE recovery_codes SET used_at = :now WHERE code_hash = :h AND owner_id = :o AND used_at IS NULL"
        " RETURNING code_hash", {"now": now, "h": _digest(code), "o": owner})
    if spent is None:
        return False
    await lockout.succeeded(db, policy, owner)
    return True
