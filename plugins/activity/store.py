"""The security log's rows: append one per event, read a merchant's newest first, record dismissals."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Mapping

from ...api import KeptList
from .describe import describe

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway
    from ...api import SecurityEvent

# The log's total per merchant and actor, kept by the database (migrations/m0003): never COUNT(*) of the log.
KEPT = KeptList("activity", ("actor",))
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


def _whose(merchant_id: str, actor: str | None) -> tuple[str, dict[str, Any]]:
    """The WHERE clause of the merchant's events, only ``actor``'s when one is named (``visibility.py``)."""
    if actor is None:
        return "e.merchant_id = :m", {"m": merchant_id}
    return "e.merchant_id = :m AND e.actor = :actor", {"m": merchant_id, "actor": actor}


async def events(gateway: "Gateway", merchant_id: str, *, limit: int, offset: int,
                 actor: str | None = None) -> tuple[list[dict[str, Any]], int]:
    """A page of the merchant's events (only ``actor``'s when named), newest first, and how many there are."""
    db = gateway.db
    where, values = _whose(merchant_id, actor)
    total = await KEPT.total(db, merchant_id, actor=actor)
    # The offset is walked over security_events_merchant (merchant_id, id: index-only for the merchant's
    # whole log), the page's rows read by id (docs/decisions.md, "deep offsets").
    rows = await db.fetch_all(
        f"{_SELECT} JOIN (SELECT e.id FROM security_events e WHERE {where} ORDER BY e.id DESC"
        " LIMIT :limit OFFSET :offset) page ON page.id = e.id ORDER BY e.id DESC",
        {**values, "limit": limit, "offset": offset})
    return [event_view(row) for row in rows], int(total or 0)


async def open_alerts(gateway: "Gateway", merchant_id: str, limit: int,
                      actor: str | None = None) -> list[dict[str, Any]]:
    """The merchant's alerts (only ``actor``'s when named) not dismissed yet, newest first."""
    where, values = _whose(merchant_id, actor)
    rows = await gateway.db.fetch_all(
        f"{_SELECT} WHERE {where} AND e.alert = :t AND d.event_id IS NULL ORDER BY e.id DESC LIMIT :limit",
        {**values, "t": True, "limit": limit})
    return [event_view(row) for row in rows]


async def dismiss(gateway: "Gateway", merchant_id: str, event_id: int, actor: str | None = None) -> bool:
    """Dismiss one of the merchant's alerts (only ``actor``'s when named; again: no change); False when it
    names no such alert."""
    where, values = _whose(merchant_id, actor)
    found = await gateway.db.fetch_val(
        f"SELECT e.id FROM security_events e WHERE e.id = :id AND {where} AND e.alert = :t",
        {**values, "id": event_id, "t": True})
    if found is None:
        return False
    await gateway.db.execute(
        "INSERT INTO security_event_dismissals (event_id, merchant_id, dismissed_at) VALUES (:id, :m, :now)"
        " ON CONFLICT (event_id) DO NOTHING", {"id": event_id, "m": merchant_id, "now": gateway.now()})
    return True
