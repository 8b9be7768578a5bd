"""The approvals plugin documents its JSON routes in ``/openapi.json`` (the Approvals page is the dashboard's)."""

from __future__ import annotations

from ...api.openapi import Op, envelope, obj, ref

TAG = "Dashboard: approvals"
JWT = ("jwt",)
SCOPE = "payout:approve"
STRING = {"type": "string"}
TIME = {"$ref": "#/components/schemas/Timestamp"}

KIND = {"type": "string", "enum": ["payout", "transfer"]}
HELD = obj({"kind": KIND, "id": {"type": "string", "description": "A payout's track id or a transfer's id."},
            "coin": STRING, "amount": STRING,
            "destination": {"type": "string", "description": "An address, or a transfer's to_account_id."},
            "usd": {"type": "string", "description": "Its value in US dollars when it was held."},
            "reason": {"type": "string", "enum": ["threshold", "daily_limit"]},
            "requested_by": {"type": "string", "description": "Who asked, for people to read."},
            "requested_by_id": {"anyOf": [STRING, {"type": "null"}],
                                "description": "holder or member:<id> (for a payout made with an API key: the "
                                               "person who created or last rotated the key); null for a job "
                                               "or plugin."},
            "key_id": {"anyOf": [STRING, {"type": "null"}],
                       "description": "The API key the payout or transfer was requested with; null for a "
                                      "dashboard session, a job or a plugin."},
            "created_at": TIME, "expires_at": TIME})
DECISION = obj({"kind": KIND, "id": STRING, "state": {"type": "string", "enum": ["approved", "rejected"]},
                "decided_at": TIME})

OPERATIONS = [
    Op("GET", "/dashboard/approvals", "List payouts and transfers awaiting approval", TAG,
       envelope(obj({"held": {"type": "array", "items": ref("Held")}})), auth=JWT, scope=SCOPE,
       description="Oldest first. Empty without an approval policy."),
    Op("POST", "/dashboard/approvals/{id}/approve", "Approve a held payout or transfer", TAG,
       envelope(ref("ApprovalDecision")), auth=JWT, scope=SCOPE, body=obj({"totp_code": STRING}),
       description="Needs the account's two-factor code (403 totp_required without 2FA, 401 totp_invalid) and "
                   "someone other than the requester (403 self_approval). Approving twice answers the same; "
                   "409 approval_rejected or approval_expired when it was decided otherwise."),
    Op("POST", "/dashboard/approvals/{id}/reject", "Reject a held payout or transfer", TAG,
       envelope(ref("ApprovalDecision")), auth=JWT, scope=SCOPE,
       description="A payout fails with reason rejected (payout.failed webhook), a transfer never moves "
                   "(failure_reason rejected); the money is available again. Rejecting twice answers the "
                   "same; 409 when it was approved or expired."),
]


def register(registry) -> None:
    registry.add_schema("Held", HELD)
    registry.add_schema("ApprovalDecision", DECISION)
    for op in OPERATIONS:
        registry.add(op)
