"""The lightning plugin's own tables (never a core one).

``lightning_invoices``: one row per invoice issued for a payment, keyed by
payment hash, so a settlement finds its payment without asking the core;
``state`` and ``settle_index`` record what the node said. The partial index
keeps the polling fallback's "open invoices" question cheap.
``lightning_cursor``: the highest settle index processed, where the invoice
stream resumes after a restart (LND replays every later settlement).
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE lightning_invoices (
            payment_hash TEXT PRIMARY KEY,
            track_id TEXT NOT NULL,
            merchant_id TEXT NOT NULL,
            bolt11 TEXT NOT NULL,
            amount_msat {amount} NOT NULL,
            expires_at {ts} NOT NULL,
            state TEXT NOT NULL,
            settle_index {bigint},
            settled_at {ts},
            amount_paid_msat {amount},
            created_at {ts} NOT NULL
        )""",
        "CREATE INDEX lightning_invoices_open ON lightning_invoices (state, expires_at)",
        "CREATE INDEX lightning_invoices_track ON lightning_invoices (track_id)",
        """CREATE TABLE lightning_cursor (
            name TEXT PRIMARY KEY,
            settle_index {bigint} NOT NULL
        )""",
    ]
