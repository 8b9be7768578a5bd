"""The approvals plugin documents its JSON routes in ``/openapi.json`` (the Approvals page is the dashboard's)."""

from __future__ import annotations

from ...api.openapi import Op, envelope, obj, ref

TAG = "Dashboard: payout approvals"
JWT = ("jwt",)
SCOPE = "payout:approve"
STRING = {"type": "string"}
TIME = {"$ref": "#/components/schemas/Timestamp"}
TRACK = "track_id"

HELD = obj({"track_id": STRING, "coin": STRING, "amount": STRING, "destination": STRING,
            "usd": {"type": "string", "description": "Its value in US dollars when it was held."},
            "reason": {"type": "string", "enum": ["threshold", "daily_limit"]},
            "requested_by": {"type": "string", "description": "Who asked, for people to read."},
            "requested_by_id": {"anyOf": [STRING, {"type": "null"}],
                                "description": "holder, member:<id>, key:<id>; null for a job or plugin."},
            "created_at": TIME, "expires_at": TIME})
DECISION = obj({"track_id": STRING, "state": {"type": "string", "enum": ["approved", "rejected"]},
                "decided_at": TIME})

OPERATIONS = [
    Op("GET", "/dashboard/payout-approvals", "List payouts awaiting approval", TAG,
       envelope(obj({"payouts": {"type": "array", "items": ref("HeldPayout")}})), auth=JWT, scope=SCOPE,
       description="Oldest first. Empty without an approval policy."),
    Op("POST", "/dashboard/payout-approvals/{track_id}/approve", "Approve a held payout", TAG,
       envelope(ref("ApprovalDecision")), auth=JWT, scope=SCOPE, body=obj({"totp_code": STRING}),
       description="Needs the account's two-factor code (403 totp_required without 2FA, 401 totp_invalid) and "
                   "someone other than the requester (403 self_approval). Approving twice answers the same; "
                   "409 approval_rejected or approval_expired when it was decided otherwise."),
    Op("POST", "/dashboard/payout-approvals/{track_id}/reject", "Reject a held payout", TAG,
       envelope(ref("ApprovalDecision")), auth=JWT, scope=SCOPE,
       description="The payout fails with reason rejected (payout.failed webhook) and its money is available "
                   "again. Rejecting twice answers the same; 409 when it was approved or expired."),
]


def register(registry) -> None:
    registry.add_schema("HeldPayout", HELD)
    registry.add_schema("ApprovalDecision", DECISION)
    for op in OPERATIONS:
        registry.add(op)
