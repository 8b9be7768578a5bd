"""The auto-withdraw plugin documents its routes in ``/openapi.json`` (``register_openapi``)."""

from __future__ import annotations

from ...api.openapi import Op, envelope, obj, ref

TAG = "Dashboard: settings"
JWT = ("jwt",)
STRING = {"type": "string"}
NULLABLE_STRING = {"anyOf": [STRING, {"type": "null"}]}
NULLABLE_TIME = {"anyOf": [{"$ref": "#/components/schemas/Timestamp"}, {"type": "null"}]}
RULE_IN = obj({"coin": STRING, "threshold_native": {"type": "string", "description": "Coin units."},
               "destination": {"type": "string", "minLength": 8, "maxLength": 200}})
RULE = obj({"coin": STRING, "threshold_native": STRING, "destination": STRING,
            "last_fired_at": NULLABLE_TIME, "last_error": NULLABLE_STRING})
RULES = envelope(obj({"rules": {"type": "array", "items": ref("AutoWithdrawRule")}}))

OPERATIONS = [
    Op("GET", "/dashboard/settings/auto-withdraw", "Auto-withdraw rules", TAG, RULES, auth=JWT),
    Op("PUT", "/dashboard/settings/auto-withdraw", "Replace the auto-withdraw rules", TAG, RULES, auth=JWT,
       body=obj({"rules": {"type": "array", "maxItems": 20, "items": RULE_IN}}),
       description="At most 20 rules, one per coin. Every 5 minutes a rule whose coin's available balance is at "
                   "least threshold_native pays the whole balance to destination through the payout pipeline, "
                   "then waits 30 minutes. 503 when payouts of a coin are not configured.", scope="payout:create"),
]


def register(registry) -> None:
    registry.add_schema("AutoWithdrawRule", RULE)
    for op in OPERATIONS:
        registry.add(op)
