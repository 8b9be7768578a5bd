"""Internal transfers between merchant accounts (SPEC 4.4, 4.12).

One row per transfer, written in the same transaction as its ledger
transaction (reference ``transfer:<id>``) and its two outbox events. The
account ids are copied in, so the history and webhooks show the ids as they
were when the money moved. ``UNIQUE (from_merchant_id, idempotency_key)``
makes a retried request find the first transfer instead of paying twice,
also when the retries race (NULL keys never collide on either database).
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE transfers (
            id TEXT PRIMARY KEY,
            from_merchant_id TEXT NOT NULL REFERENCES merchants(id),
            to_merchant_id TEXT NOT NULL REFERENCES merchants(id),
            from_account_id TEXT NOT NULL,
            to_account_id TEXT NOT NULL,
            coin TEXT NOT NULL,
            amount {amount} NOT NULL,
            idempotency_key TEXT,
            source TEXT NOT NULL,
            key_id TEXT,
            request_id TEXT,
            created_at {ts} NOT NULL,
            UNIQUE (from_merchant_id, idempotency_key)
        )""",
        "CREATE INDEX transfers_from_created ON transfers (from_merchant_id, created_at)",
        "CREATE INDEX transfers_to_created ON transfers (to_merchant_id, created_at)",
    ]
