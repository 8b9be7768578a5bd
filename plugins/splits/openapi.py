"""The splits plugin documents its route in ``/openapi.json`` (``register_openapi``)."""

from __future__ import annotations

from ...api.openapi import Op, envelope, obj, ref

STRING = {"type": "string"}
NULLABLE_STRING = {"anyOf": [STRING, {"type": "null"}]}
ENTRY = obj({"bps": {"type": "integer", "minimum": 1, "maximum": 10000}},
            {"recipient_merchant_id": STRING, "recipient_address": STRING})
PAYOUT = obj({"deposit_id": STRING, "position": {"type": "integer"}, "coin": STRING, "address": STRING,
              "amount": STRING, "status": {"type": "string", "enum": ["pending", "requested", "failed", "reversed"]},
              "payout_track_id": NULLABLE_STRING, "failure_reason": NULLABLE_STRING})
SPLITS = envelope(obj({"track_id": STRING, "splits": {"type": "array", "items": ref("SplitEntry")},
                       "payouts": {"type": "array", "items": ref("SplitPayout")}}))

OPERATIONS = [
    Op("GET", "/v1/payment/{track_id}/splits", "A payment's revenue splits and their payouts", "Payments", SPLITS,
       auth=("merchant_key",), scope="payment:read",
       description="The split entries given at creation (immutable; empty for a payment without splits) and, per "
                   "credited deposit, each address share's payout: pending until released, requested with the "
                   "payout's track_id, failed with a reason (the share stayed with the merchant), or reversed "
                   "when the deposit left the chain first. 404 for another merchant's payment."),
]


def register(registry) -> None:
    registry.add_schema("SplitEntry", ENTRY)
    registry.add_schema("SplitPayout", PAYOUT)
    for op in OPERATIONS:
        registry.add(op)
