"""The approval policy of an account, the payouts and transfers it holds, and what each requester spent per day.

Amounts in USD are integers of 1e-8 dollars (``USD_DECIMALS``), never
floats. ``approval_holds.state`` leaves ``awaiting`` once, by a conditional
UPDATE in the transaction that moves the payout (approve, reject, expire).
``subject_id`` is a payout's or a transfer's id (``kind``), ``ref`` the id
people see (a payout's track id, a transfer's id). ``approval_spend`` has a
row for every payout and transfer made under a policy: the
daily limits sum it (UTC day), under the merchant lock the payout takes.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE approval_policies (
            merchant_id TEXT PRIMARY KEY,
            thresholds TEXT NOT NULL,
            expiry_hours INTEGER NOT NULL,
            member_daily_usd {bigint},
            key_daily_usd {bigint},
            updated_at {ts} NOT NULL
        )""",
        """CREATE TABLE approval_holds (
            subject_id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            ref TEXT NOT NULL,
            merchant_id TEXT NOT NULL,
            coin TEXT NOT NULL,
            amount {amount} NOT NULL,
            destination TEXT NOT NULL,
            requested_by TEXT,
            reason TEXT NOT NULL,
            usd {bigint} NOT NULL,
            state TEXT NOT NULL,
            decided_by TEXT,
            decided_at {ts},
            expires_at {ts} NOT NULL,
            created_at {ts} NOT NULL
        )""",
        "CREATE UNIQUE INDEX approval_holds_ref ON approval_holds (merchant_id, ref)",
        "CREATE INDEX approval_holds_merchant ON approval_holds (merchant_id, state, created_at)",
        "CREATE INDEX approval_holds_expiry ON approval_holds (state, expires_at)",
        """CREATE TABLE approval_spend (
            subject_id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            requested_by TEXT NOT NULL,
            day TEXT NOT NULL,
            usd {bigint} NOT NULL
        )""",
        "CREATE INDEX approval_spend_day ON approval_spend (merchant_id, requested_by, day)",
    ]
