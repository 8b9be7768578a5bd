"""The security log's rows: append one per event, read a merchant's newest first, record dismissals."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Mapping

from .describe import describe

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway
    from ...api import SecurityEvent

_SELECT = ("SELECT e.*, d.dismissed_at FROM security_events e"
           " LEFT JOIN security_event_dismissals d ON d.event_id = e.id")


async def record(gateway: "Gateway", event: "SecurityEvent") -> None:
    await gateway.db.execute(
        "INSERT INTO security_events (merchant_id, kind, details, client_ip, user_agent, request_id, alert,"
        " actor, created_at) VALUES (:m, :k, :d, :ip, :ua, :rid, :alert, :actor, :at)",
        {"m": event.merchant_id, "k": event.kind, "d": json.dumps(dict(event.details), sort_keys=True),
         "ip": event.client_ip, "ua": event.user_agent, "rid": event.request_id, "alert": bool(event.alert),
         "actor": event.actor, "at": int(event.at)})


def event_view(row: Mapping[str, Any]) -> dict[str, Any]:
    """One event as the page and ``GET /dashboard/activity`` show it."""
    details = json.loads(row["details"])
    return {"id": int(row["id"]), "kind": row["kind"], "description": describe(row["kind"], details),
            "details": details, "client_ip": row["client_ip"], "user_agent": row["user_agent"],
            "request_id": row["request_id"], "alert": bool(row["alert"]), "actor": row["actor"],
            "dismissed": row["dismissed_at"] is not None, "created_at": int(row["created_at"])}


async def events(gateway: "Gateway", merchant_id: str, *, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    """A page of the merchant's events, newest first, and how many there are."""
    db = gateway.db
    total = await db.fetch_val("SELECT COUNT(*) FROM security_events WHERE merchant_id = :m", {"m": merchant_id})
    rows = await db.fetch_all(f"{_SELECT} WHERE e.merchant_id = :m ORDER BY e.id DESC LIMIT :limit OFFSET :offset",
                              {"m": merchant_id, "limit": limit, "offset": offset})
    return [event_view(row) for row in rows], int(total or 0)


async def open_alerts(gateway: "Gateway", merchant_id: str, limit: int) -> list[dict[str, Any]]:
    """The merchant's alerts not dismissed yet, newest first."""
    rows = await gateway.db.fetch_all(
        f"{_SELECT} WHERE e.merchant_id = :m AND e.alert = :t AND d.event_id IS NULL ORDER BY e.id DESC LIMIT :limit",
        {"m": merchant_id, "t": True, "limit": limit})
    return [event_view(row) for row in rows]


async def dismiss(gateway: "Gateway", merchant_id: str, event_id: int) -> bool:
    """Dismiss one of the merchant's own alerts (again: no change); False when it names no such alert."""
    found = await gateway.db.fetch_val(
        "SELECT id FROM security_events WHERE id = :id AND merchant_id = :m AND alert = :t",
        {"id": event_id, "m": merchant_id, "t": True})
    if found is None:
        return False
    await gateway.db.execute(
        "INSERT INTO security_event_dismissals (event_id, merchant_id, dismissed_at) VALUES (:id, :m, :now)"
        " ON CONFLICT (event_id) DO NOTHING", {"id": event_id, "m": merchant_id, "now": gateway.now()})
    return True
