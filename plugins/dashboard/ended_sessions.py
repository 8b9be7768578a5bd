"""Sessions ended server-side: signing out records the cookie's session id until its JWT expires.

Clearing the cookie alone would leave a copy taken earlier (a shared
computer, a leaked header) valid for the rest of the token's 24 hours;
with this table that copy is refused the moment its owner signs out. Rows
past ``expires_at`` guard nothing (the token inside is dead) and the prune
job deletes them.
"""

from __future__ import annotations

from typing import Any

PRUNE_JOB = "dashboard.prune_ended_sessions"
PRUNE_SECONDS = 3600


async def end(gateway: Any, session_id: str, expires_at: int) -> None:
    await gateway.db.execute(
        "INSERT INTO dashboard_ended_sessions (session_id, expires_at) VALUES (:s, :e) ON CONFLICT DO NOTHING",
        {"s": session_id, "e": expires_at})


async def is_ended(gateway: Any, session_id: str) -> bool:
    found = await gateway.db.fetch_val("SELECT 1 FROM dashboard_ended_sessions WHERE session_id = :s",
                                       {"s": session_id})
    return found is not None


async def prune(gateway: Any) -> None:
    await gateway.db.execute("DELETE FROM dashboard_ended_sessions WHERE expires_at <= :now", {"now": gateway.now()})
