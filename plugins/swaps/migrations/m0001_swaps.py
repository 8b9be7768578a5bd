"""Swaps (SPEC 2.16, 3.5, 4.12), auto-settle's locked quotes and the account's default settlement coin.

``swaps`` holds balance swaps and auto-settle conversions alike (``kind``):
one row per swap id, the id the venue sees, so every step can be retried
after a crash. ``settle_quotes`` is the quote locked when a payment with a
settlement coin was created. ``settle_defaults`` is the account's
``default_settlement_coin`` (the plugin's own table: the core account
record stays coin-agnostic).
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE swaps (
            id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            venue TEXT NOT NULL,
            from_coin TEXT NOT NULL,
            to_coin TEXT NOT NULL,
            from_amount {amount} NOT NULL,
            to_amount_quoted {amount} NOT NULL,
            floating {bool} NOT NULL,
            status TEXT NOT NULL,
            venue_ref TEXT,
            deposit_address TEXT,
            funded {bool},
            payin_payout_id TEXT,
            actual_to_amount {amount},
            payin_hash TEXT,
            payout_hash TEXT,
            refund_hash TEXT,
            failure_reason TEXT,
            fallback {bool} NOT NULL,
            deposit_id TEXT,
            track_id TEXT,
            credit_done {bool} NOT NULL,
            idempotency_key TEXT,
            attempts INTEGER NOT NULL,
            next_attempt_at {ts} NOT NULL,
            deadline_at {ts} NOT NULL,
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL,
            UNIQUE (merchant_id, idempotency_key)
        )""",
        "CREATE INDEX swaps_merchant ON swaps (merchant_id, created_at)",
        "CREATE INDEX swaps_due ON swaps (status, next_attempt_at)",
        "CREATE INDEX swaps_track ON swaps (track_id)",
        """CREATE TABLE settle_quotes (
            track_id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            venue TEXT NOT NULL,
            from_coin TEXT NOT NULL,
            to_coin TEXT NOT NULL,
            from_amount {amount} NOT NULL,
            to_amount {amount} NOT NULL,
            created_at {ts} NOT NULL
        )""",
        """CREATE TABLE settle_defaults (
            merchant_id TEXT PRIMARY KEY,
            default_settlement_coin TEXT,
            updated_at {ts} NOT NULL
        )""",
    ]
