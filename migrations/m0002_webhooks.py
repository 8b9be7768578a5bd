"""Webhook outbox and delivery log.

``webhook_events`` is the transactional outbox: a row is written in the same
transaction as the state change it announces, keyed by the deterministic
event id so a re-emission of the same logical event is a no-op. The body is
stored sealed (exact bytes), so every retry sends the same bytes and the
same signature.

``webhook_deliveries`` is the append-only log of attempts shown by
GET /dashboard/webhook-logs.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE webhook_events (
            event_id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL REFERENCES merchants(id),
            event_type TEXT NOT NULL,
            logical_key TEXT NOT NULL,
            url_override TEXT,
            signing_secret TEXT,
            body TEXT NOT NULL,
            event_timestamp {ts} NOT NULL,
            request_id TEXT,
            status TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at {ts},
            claim_token TEXT,
            last_error TEXT,
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL,
            delivered_at {ts}
        )""",
        # The delivery tick scans only rows still waiting to be sent.
        "CREATE INDEX webhook_events_due ON webhook_events (status, next_attempt_at)",
        "CREATE INDEX webhook_events_merchant ON webhook_events (merchant_id, created_at)",
        """CREATE TABLE webhook_deliveries (
            id {id_pk},
            event_id TEXT NOT NULL REFERENCES webhook_events(event_id),
            merchant_id TEXT NOT NULL,
            url TEXT,
            status_code INTEGER,
            success {bool} NOT NULL,
            attempt INTEGER NOT NULL,
            error TEXT,
            payload_preview TEXT,
            response_preview TEXT,
            duration_ms INTEGER,
            created_at {ts} NOT NULL
        )""",
        "CREATE INDEX webhook_deliveries_merchant ON webhook_deliveries (merchant_id, id)",
        "CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id)",
    ]
