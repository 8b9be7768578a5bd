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

TOTP failures count per channel (``totp_policy``): the dashboard (pages,
JSON API, merchant API) shares one count; a plugin's own client such as
the mini-app has its own, so a session there cannot lock the dashboard.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import NamedTuple

from ..infra.db import Database
from ..types.errors import RateLimited


@dataclass(frozen=True)
class LockoutPolicy:
    name: str
    max_failures: int
    window_seconds: int
    lock_seconds: int


# Every endpoint of the dashboard channel that takes a TOTP code shares one count per account.
TOTP_POLICY = LockoutPolicy("totp", max_failures=5, window_seconds=15 * 60, lock_seconds=15 * 60)
# The channel of the dashboard's pages, its JSON API and the merchant API (a plugin's own client,
# such as the mini-app, names its own channel).
DASHBOARD_CHANNEL = "dashboard"
_CHANNEL = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
# Per account (e-mail), on top of the per-IP auth limit; unknown e-mails are
# counted the same way, so a lockout says nothing about whether one exists.
LOGIN_POLICY = LockoutPolicy("login", max_failures=10, window_seconds=15 * 60, lock_seconds=15 * 60)


class LockedOut(RateLimited):
    """429 while a lockout runs; ``Retry-After`` is the seconds left."""

    def __init__(self, message: str, seconds: int) -> None:
        super().__init__(message, headers={"Retry-After": str(max(1, seconds))})


def totp_policy(channel: str = DASHBOARD_CHANNEL) -> LockoutPolicy:
    """The TOTP lockout of one channel: the dashboard's is ``TOTP_POLICY``; any other counts on its own.

    Wrong codes sent from a plugin's client (the mini-app, ``"miniapp"``)
    lock that client only, so whoever holds such a session cannot lock the
    account holder out of the dashboard's transfers, swaps and 2FA settings
    with five wrong codes; the dashboard's failures likewise leave the other
    channel alone. Each channel keeps the same limits.
    """
    if channel == DASHBOARD_CHANNEL:
        return TOTP_POLICY
    if not isinstance(channel, str) or not _CHANNEL.match(channel):
        raise ValueError(f"a lockout channel is a lower-case name, not {channel!r}")
    return LockoutPolicy(f"totp-{channel}", TOTP_POLICY.max_failures, TOTP_POLICY.window_seconds,
                         TOTP_POLICY.lock_seconds)


class Attempt(NamedTuple):
    """What counting one check found: the seconds still locked (0: go ahead), and whether this check locked it."""

    locked_seconds: int
    newly_locked: bool


def subject(policy: LockoutPolicy, account: str) -> str:
    """The row key: hashed, so no e-mail address is stored in plaintext here."""
    return f"{policy.name}:" + hashlib.sha256(account.encode("utf-8")).hexdigest()[:32]


async def attempt(db: Database, policy: LockoutPolicy, account: str, now: int) -> int:
    """Count one check as a failure; the seconds the account stays locked (0: go ahead and check)."""
    return (await count_attempt(db, policy, account, now)).locked_seconds


async def count_attempt(db: Database, policy: LockoutPolicy, account: str, now: int) -> Attempt:
    """``attempt``, also telling whether this very check started the lock (to announce a burst once)."""
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
            return Attempt(int(locked_until) - now, False)
        if int(row["failures"]) > policy.max_failures:
            await db.execute(
                "UPDATE auth_lockouts SET locked_until = :until, failures = 0, window_start = :now WHERE subject = :s",
                {"until": now + policy.lock_seconds, "now": now, "s": key},
            )
            return Attempt(policy.lock_seconds, True)
    return Attempt(0, False)


async def succeeded(db: Database, policy: LockoutPolicy, account: str) -> None:
    """The secret was right: forget the counted failures."""
    await db.execute("DELETE FROM auth_lockouts WHERE subject = :s", {"s": subject(policy, account)})


async def prune(db: Database, now: int, older_than: int = 24 * 3600) -> None:
    """Drop rows whose window and lock ended long ago (called from an occasional job or test)."""
    await db.execute(
        "DELETE FROM auth_lockouts WHERE window_start < :cut AND (locked_until IS NULL OR locked_until < :now)",
        {"cut": now - older_than, "now": now},
    )
