"""Splits of white-label payments and the payouts of their address shares, in the plugin's own tables.

``splits_entries`` is written once when the payment is created and never
updated (splits are immutable). ``splits_payouts`` has one row per (credited
deposit, address share): written in the crediting transaction, then moved
to ``requested`` (with the payout's id) or ``failed`` by the release step,
or to ``reversed`` when the deposit's credit was reorganised away first.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE splits_entries (
            track_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            merchant_id TEXT NOT NULL,
            bps INTEGER NOT NULL,
            recipient_merchant_id TEXT,
            recipient_address TEXT,
            created_at {ts} NOT NULL,
            PRIMARY KEY (track_id, position)
        )""",
        """CREATE TABLE splits_payouts (
            deposit_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            track_id TEXT NOT NULL,
            merchant_id TEXT NOT NULL,
            coin TEXT NOT NULL,
            address TEXT NOT NULL,
            amount {amount} NOT NULL,
            status TEXT NOT NULL,
            payout_track_id TEXT,
            failure_reason TEXT,
            last_error TEXT,
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL,
            PRIMARY KEY (deposit_id, position)
        )""",
        "CREATE INDEX splits_payouts_pending ON splits_payouts (status, created_at)",
        "CREATE INDEX splits_payouts_track ON splits_payouts (track_id)",
    ]
