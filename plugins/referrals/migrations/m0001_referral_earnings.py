"""Referral earnings (SPEC 2.16, 4.7): one row per referee deposit credit that paid the referrer.

The money itself is a ledger transaction (``referral:<credit reference>``,
platform fees to the referrer); this row remembers what it was for, the
USD values at the time, and whether the deposit was since reversed, so the
statistics need no walk of the ledger. ``source_txn_id`` (the deposit's
ledger transaction) is how a reversal finds its earning.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE referral_earnings (
            reference TEXT PRIMARY KEY,
            source_txn_id TEXT NOT NULL UNIQUE,
            referrer_id TEXT NOT NULL,
            referee_id TEXT NOT NULL,
            coin TEXT NOT NULL,
            fee {amount} NOT NULL,
            earning {amount} NOT NULL,
            fee_usd {bigint} NOT NULL,
            earning_usd {bigint} NOT NULL,
            reversed {bool} NOT NULL DEFAULT FALSE,
            created_at {ts} NOT NULL
        )""",
        "CREATE INDEX referral_earnings_referrer ON referral_earnings (referrer_id, referee_id)",
    ]
