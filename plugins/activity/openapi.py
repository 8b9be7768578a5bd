"""The activity plugin documents its route in ``/openapi.json``."""

from __future__ import annotations

from ...api.openapi import Op, Param, envelope, obj, ref

STRING, INTEGER, BOOLEAN = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
NULLABLE_STRING = {"anyOf": [STRING, {"type": "null"}]}

EVENT = obj({"id": INTEGER, "kind": STRING, "description": STRING,
             "details": {"type": "object", "additionalProperties": STRING}, "client_ip": NULLABLE_STRING,
             "user_agent": NULLABLE_STRING, "request_id": NULLABLE_STRING, "alert": BOOLEAN, "dismissed": BOOLEAN,
             "actor": NULLABLE_STRING,
             "created_at": INTEGER})


def register(registry) -> None:
    registry.add_schema("SecurityEvent", EVENT)
    registry.add(Op(
        "GET", "/dashboard/activity", "The account's security events", "Dashboard: account",
        envelope(obj({"events": {"type": "array", "items": ref("SecurityEvent")}, "total": INTEGER,
                      "limit": INTEGER, "offset": INTEGER})),
        auth=("jwt",),
        query=(Param("limit", {"type": "integer", "minimum": 1, "maximum": 200}, "Default 50."),
               Param("offset", {"type": "integer", "minimum": 0}, "Default 0.")),
        description="Newest first: sign-ins (password, identity provider, mini-app session) with client IP and "
                    "user agent, sign-in lockouts, password changes, 2FA turned on or off (details.via: "
                    "dashboard or miniapp), API keys created, rotated or revoked, Telegram chats linked and "
                    "unlinked (with the chat's name). Append-only: the database refuses updates and deletes. "
                    "alert marks events the dashboard's home page shows until dismissed. Query limit "
                    "(default 50, 1-200) and offset. No secret ever appears in an event. actor: who did it, "
                    "\"member <e-mail>\" (a team member) or \"key <id>\"; null for the account holder. A team member "
                    "without activity:read (owners and admins hold it) gets only the entries they made themselves "
                    "(actor \"member <their e-mail>\"), total counting those."))
