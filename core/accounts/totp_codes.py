"""Checking a stored TOTP secret's code: the replay guard and the lockout, for every secret the core keeps.

The account holder's secret is on ``merchants``, a team member's on
``member_totp`` (same three columns): both are checked here, under the
row's lock, so a code is accepted once (its time-step is remembered) and
wrong codes count against the owner of the secret (the holder's merchant
id, or the member id) on the channel asking.
"""

from __future__ import annotations

from typing import Any

from . import auth, lockout
from ..infra.db import Database

TABLES = frozenset({"merchants", "member_totp"})  # tables holding totp_secret, totp_enabled, totp_last_step


async def check_stored_code(db: Database, table: str, row_id: str, code: Any, *, now: int, pending: bool = False,
                            channel: str = lockout.DASHBOARD_CHANNEL) -> bool:
    """True when ``code`` is valid now and was not used before; ``pending`` accepts a secret not yet turned on.

    Past ``lockout.totp_policy(channel)`` failures it raises ``LockedOut``
    (429) for every code, right or wrong, until the lockout ends.
    """
    if table not in TABLES:
        raise ValueError(f"no TOTP secrets in {table!r}")
    code = auth.normalize_totp_code(code)
    if code is None:
        return False
    locked = 0
    async with db.transaction():
        row = await db.fetch_one(
            f"SELECT totp_secret, totp_enabled, totp_last_step FROM {table} WHERE id = :id" + db.for_update,
            {"id": row_id},
        )
        if row is None or not row["totp_secret"] or (not pending and not row["totp_enabled"]):
            return False
        # One failure count per secret for every endpoint that takes a code;
        # counted under the row lock, before the code is compared.
        policy = lockout.totp_policy(channel)
        locked = await lockout.attempt(db, policy, row_id, now)
        if not locked:
            step = auth.matching_totp_step(row["totp_secret"], code, now)
            if step is None or (row["totp_last_step"] is not None and step <= int(row["totp_last_step"])):
                return False
            await db.execute(f"UPDATE {table} SET totp_last_step = :s WHERE id = :id", {"s": step, "id": row_id})
            await lockout.succeeded(db, policy, row_id)
    if locked:  # raised outside the transaction, so the lockout itself is committed
        raise lockout.LockedOut("too many invalid TOTP codes; try again later", locked)
    return True
