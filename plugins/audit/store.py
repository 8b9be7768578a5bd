"""Reading a key's audit log, newest first, in pages (SPEC 5.2, 8)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...api import NotFound, api_key_exists

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway


def entry_view(row: Any) -> dict[str, Any]:
    return {"id": int(row["id"]), "method": row["method"], "route": row["route"], "status": int(row["status"]),
            "request_id": row["request_id"], "source_ip": row["client_ip"], "created_at": int(row["created_at"])}


async def require_own_key(gateway: "Gateway", merchant_id: str, key_id: str) -> None:
    """404 "api key not found" unless ``key_id`` names one of this merchant's keys (revoked ones included)."""
    if not key_id or len(key_id) > 64 or not await api_key_exists(gateway, merchant_id, key_id):
        raise NotFound("api key not found")


async def key_log(gateway: "Gateway", key_id: str, *, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    db = gateway.db
    total = await db.fetch_val("SELECT COUNT(*) FROM key_audit_log WHERE key_id = :k", {"k": key_id})
    rows = await db.fetch_all(
        "SELECT id, method, route, status, request_id, client_ip, created_at FROM key_audit_log"
        " WHERE key_id = :k ORDER BY id DESC LIMIT :limit OFFSET :offset",
        {"k": key_id, "limit": limit, "offset": offset})
    return [entry_view(row) for row in rows], int(total or 0)
