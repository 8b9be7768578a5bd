"""The operator's notifications (issue 45 item 6): an outbox of their own, not ``webhook_events``.

``webhook_events`` rows belong to a merchant (a foreign key, the merchant's delivery log and retention); an
operator event (a payout held by the signing policy, a sweep to cold, a custody shortfall or recovery, a node
refused) belongs to none, and a forged payout row's merchant may not even exist. ``event_id`` is derived from
the logical key, so announcing the same thing twice (two processes, a replayed job) makes one row.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE operator_events (
            event_id TEXT PRIMARY KEY,
            event_type TEXT NOT NULL,
            body TEXT NOT NULL,
            status TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at {ts},
            last_error TEXT,
            created_at {ts} NOT NULL,
            delivered_at {ts}
        )""",
        "CREATE INDEX operator_events_due ON operator_events (status, next_attempt_at)",
    ]
