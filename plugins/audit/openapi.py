"""The audit plugin documents its route in ``/openapi.json``."""

from __future__ import annotations

from ...api.openapi import Op, envelope, obj, ref

STRING, INTEGER = {"type": "string"}, {"type": "integer"}

ENTRY = obj({"id": INTEGER, "method": STRING, "route": STRING, "status": INTEGER, "request_id": STRING,
             "source_ip": STRING, "created_at": INTEGER})


def register(registry) -> None:
    registry.add_schema("KeyAuditEntry", ENTRY)
    registry.add(Op(
        "GET", "/dashboard/api-keys/{key_id}/audit-log", "A scoped API key's audit log", "Dashboard: API keys",
        envelope(obj({"key_id": STRING, "entries": {"type": "array", "items": ref("KeyAuditEntry")},
                      "total": INTEGER, "limit": INTEGER, "offset": INTEGER})),
        auth=("jwt",),
        description="Every request made with the key, refused ones included (403, 429), newest first: route "
                    "template, status, request_id and source IP. Append-only: the database refuses updates and "
                    "deletes. Query limit (default 50, 1-200) and offset. A key of another account is 404."))
