"""The schedules plugin documents its routes in ``/openapi.json`` (``register_openapi``)."""

from __future__ import annotations

from ...api.openapi import Op, envelope, obj, ref

TAG = "Dashboard: payout schedules"
JWT = ("jwt",)
STRING, BOOLEAN = {"type": "string"}, {"type": "boolean"}
NULLABLE_TIME = {"anyOf": [{"$ref": "#/components/schemas/Timestamp"}, {"type": "null"}]}
INTERVAL = {"type": "integer", "minimum": 3600, "maximum": 2592000}
MIN_AMOUNT = {"type": "string", "description": "Coin units (decimal string), at least the coin's minimum payout."}

SCHEDULE = obj({
    "id": STRING, "coin": STRING, "destination": STRING, "min_amount": STRING, "interval_sec": INTERVAL,
    "enabled": BOOLEAN, "last_run_at": NULLABLE_TIME,
    "last_error": {"anyOf": [STRING, {"type": "null"}]}, "next_run_at": {"$ref": "#/components/schemas/Timestamp"},
})

OPERATIONS = [
    Op("POST", "/dashboard/payout-schedules", "Create a payout schedule", TAG, envelope(ref("PayoutSchedule")),
       auth=JWT, body=obj({"coin": STRING, "destination": {"type": "string", "maxLength": 128},
                           "min_amount": MIN_AMOUNT, "interval_sec": INTERVAL}),
       description="Every interval_sec the full available balance of coin is paid to destination through the "
                   "standard payout pipeline, when it is at least min_amount. The first run is one interval "
                   "after creation. 503 when payouts of the coin are not configured.", scope="payout:create"),
    Op("GET", "/dashboard/payout-schedules", "List payout schedules", TAG,
       envelope(obj({"schedules": {"type": "array", "items": ref("PayoutSchedule")}})), auth=JWT, scope="payout:read"),
    Op("PATCH", "/dashboard/payout-schedules/{id}", "Change a payout schedule", TAG,
       envelope(ref("PayoutSchedule")), auth=JWT,
       body=obj({}, {"enabled": BOOLEAN, "min_amount": MIN_AMOUNT, "interval_sec": INTERVAL}), scope="payout:create"),
    Op("DELETE", "/dashboard/payout-schedules/{id}", "Delete a payout schedule", TAG,
       envelope(obj({"id": STRING, "deleted": BOOLEAN})), auth=JWT,
       description="Stops future runs only; payouts already requested finish.", scope="payout:create"),
]


def register(registry) -> None:
    registry.add_schema("PayoutSchedule", SCHEDULE)
    for op in OPERATIONS:
        registry.add(op)
