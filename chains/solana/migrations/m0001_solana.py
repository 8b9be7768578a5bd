"""Signed transactions and sweep marks of the solana plugin.

``solana_txs`` holds every transaction the gateway signs on Solana
(payouts and sweeps) BEFORE it is sent, idempotent by (kind, ref): after a
crash the same bytes go out again. ``stored`` -> ``sent`` -> ``landed`` or
``failed`` (landed with an error: only the fee moved), or ``expired`` (its
blockhash can no longer land on any fork) or ``rejected`` (the node refused
it for good). At most one live sweep per deposit address.

``solana_sweep_marks`` remembers up to which credit an address was swept.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE solana_txs (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('payout', 'sweep')),
            ref TEXT NOT NULL,
            sender TEXT NOT NULL,
            recipient TEXT NOT NULL,
            coin TEXT NOT NULL,
            amount {amount} NOT NULL,
            fee {amount} NOT NULL,
            signature TEXT NOT NULL UNIQUE,
            raw TEXT NOT NULL,
            blockhash TEXT NOT NULL,
            last_valid_block_height {bigint} NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('stored', 'sent', 'landed', 'failed', 'expired', 'rejected')),
            slot {bigint},
            fee_paid {amount},
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL,
            UNIQUE (kind, ref)
        )""",
        """CREATE UNIQUE INDEX solana_txs_live_sweep ON solana_txs (sender)
            WHERE kind = 'sweep' AND status IN ('stored', 'sent')""",
        "CREATE INDEX solana_txs_open ON solana_txs (kind, status)",
        """CREATE TABLE solana_sweep_marks (
            address TEXT PRIMARY KEY,
            swept_through {ts} NOT NULL
        )""",
    ]
