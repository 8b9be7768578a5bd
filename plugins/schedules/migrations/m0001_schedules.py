"""Payout schedules (SPEC 2.16): the plugin's own table, never a core one.

``next_run_at`` is indexed because the every-minute tick asks only for
enabled schedules that are due.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE payout_schedules (
            id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            coin TEXT NOT NULL,
            destination TEXT NOT NULL,
            min_amount {amount} NOT NULL,
            interval_sec {bigint} NOT NULL,
            enabled {bool} NOT NULL,
            last_run_at {ts},
            last_error TEXT,
            last_payout_id TEXT,
            next_run_at {ts} NOT NULL,
            created_at {ts} NOT NULL
        )""",
        "CREATE INDEX payout_schedules_merchant ON payout_schedules (merchant_id, created_at)",
        "CREATE INDEX payout_schedules_due ON payout_schedules (enabled, next_run_at)",
    ]
