"""XMR deposits credited into the swap-in account, waiting for the swaps plugin to convert them.

One row per deposit, written in the crediting transaction: ``awaiting`` until
a converter takes it (``taken``, with the ledger reference of that move) or
until a reorg removes the credit first (``reversed``; revived to
``awaiting`` when the same transaction is credited again).
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE monero_swapins (
            deposit_id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            track_id TEXT,
            amount {amount} NOT NULL,
            fee {amount} NOT NULL,
            status TEXT NOT NULL,
            taken_to TEXT,
            taken_reference TEXT,
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL
        )""",
        "CREATE INDEX monero_swapins_status ON monero_swapins (status, created_at)",
    ]
