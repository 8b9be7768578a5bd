"""Analytics (SPEC 4.7): one row per counted ledger transaction, and daily sums per merchant.

``analytics_events`` makes counting idempotent (a transaction counts once,
whether the hook or the catch-up job sees it first) and remembers the USD
value a deposit was counted at, so its reversal subtracts exactly that.
``analytics_daily`` is what the endpoint reads: 30 rows by primary key,
however long the history. USD is integer 1e-8 dollars (exact sums on both
databases, never a float).
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE analytics_events (
            transaction_id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            day TEXT NOT NULL,
            kind TEXT NOT NULL,
            count_delta INTEGER NOT NULL,
            usd {bigint} NOT NULL,
            created_at {ts} NOT NULL
        )""",
        "CREATE INDEX analytics_events_time ON analytics_events (created_at)",
        """CREATE TABLE analytics_daily (
            merchant_id TEXT NOT NULL,
            day TEXT NOT NULL,
            deposits_usd {bigint} NOT NULL,
            payouts_usd {bigint} NOT NULL,
            deposit_count {bigint} NOT NULL,
            payout_count {bigint} NOT NULL,
            PRIMARY KEY (merchant_id, day)
        )""",
    ]
