"""Per-account failure lockouts for guessable secrets: TOTP codes and passwords.

A request rate limit does not stop guessing: an attacker with a stolen
dashboard token can spend a whole minute's write budget on TOTP codes, every
minute. These lockouts count failed checks per account instead and, past
``max_failures`` inside ``window_seconds``, refuse every check (right or
wrong) for ``lock_seconds``.

Every check counts as a failure *before* the secret is compared
(``attempt``) and is forgiven when it succeeds (``succeeded``), so a burst
of parallel guesses cannot all slip through before the first failure is
written. The counts live in ``auth_lockouts`` so they survive restarts and
are shared by every process on PostgreSQL; rows are only written when a
secret is checked, never on ordinary requests.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .db import Database
from .errors import RateLimited


@dataclass(frozen=True)
class LockoutPolicy:
    name: str
    max_failures: int
    window_seconds: int
    lock_seconds: int


# Every endpoint that takes a TOTP code shares one count per account.
TOTP_POLICY = LockoutPolicy("totp", max_failures=5, window_seconds=15 * 60, lock_seconds=15 * 60)
# Per account (e-mail), on top of the per-IP auth limit; unknown e-mails are
# counted the same way, so a lockout says nothing about whether one exists.
LOGIN_POLICY = LockoutPolicy("login", max_failures=10, window_seconds=15 * 60, lock_seconds=15 * 60)


class LockedOut(RateLimited):
    """429 while a lockout runs; ``Retry-After`` is the seconds left."""

    def __init__(self, message: str, seconds: int) -> None:
        super().__init__(message, headers={"Retry-After": str(max(1, seconds))})


def subject(policy: LockoutPolicy, account: str) -> str:
    """The row key: hashed, so no e-mail address is stored in plaintext here."""
    return f"{policy.name}:" + hashlib.sha256(account.encode("utf-8")).hexdigest()[:32]


async def attempt(db: Database, policy: LockoutPolicy, account: str, now: int) -> int:
    """Count one check as a failure; the seconds the account stays locked (0: go ahead and check)."""
    key = subject(policy, account)
    async with db.transaction():
        row = await db.fetch_one(
            "INSERT INTO auth_lockouts (subject, failures, window_start, locked_until) VALUES (:s, 1, :now, NULL)"
            " ON CONFLICT (subject) DO UPDATE SET"
            " failures = CASE WHEN auth_lockouts.locked_until > :now THEN auth_lockouts.failures"
            "  WHEN auth_lockouts.window_start <= :cut THEN 1 ELSE auth_lockouts.failures + 1 END,"
            " window_start = CASE WHEN auth_lockouts.locked_until > :now THEN auth_lockouts.window_start"
            "  WHEN auth_lockouts.window_start <= :cut THEN :now ELSE auth_lockouts.window_start END"
            " RETURNING failures, locked_until",
            {"s": key, "now": now, "cut": now - policy.window_seconds},
        )
        assert row is not None, "an upsert with RETURNING returns the row it wrote"
        locked_until = row["locked_until"]
        if locked_until is not None and int(locked_until) > now:
            return int(locked_until) - now
        if int(row["failures"]) > policy.max_failures:
            await db.execute(
                "UPDATE auth_lockouts SET locked_until = :until, failures = 0, window_start = :now WHERE subject = :s",
                {"until": now + policy.lock_seconds, "now": now, "s": key},
            )
            return policy.lock_seconds
    return 0


async def succeeded(db: Database, policy: LockoutPolicy, account: str) -> None:
    """The secret was right: forget the counted failures."""
    await db.execute("DELETE FROM auth_lockouts WHERE subject = :s", {"s": subject(policy, account)})


async def prune(db: Database, now: int, older_than: int = 24 * 3600) -> None:
    """Drop rows whose window and lock ended long ago (called from an occasional job or test)."""
    await db.execute(
        "DELETE FROM auth_lockouts WHERE window_start < :cut AND (locked_until IS NULL OR locked_until < :now)",
        {"cut": now - older_than, "now": now},
    )
