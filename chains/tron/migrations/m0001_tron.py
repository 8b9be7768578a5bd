"""Signed transactions and sweeps of the tron plugin.

``tron_txs`` holds every transaction the gateway signs on Tron (payouts,
sweeps, TRX top-ups of deposit addresses) BEFORE it is broadcast, so after
a crash the same bytes go out again. Tron has no nonces: a transaction is
unique by its txID and valid until its ``expiration_ms``; after that it can
never be mined, which is what makes giving up on it safe.

``tron_sweeps`` moves one coin's balance from one deposit address to the hot
wallet: ``topup`` (TRX for energy and bandwidth sent first, tokens only) ->
``sweeping`` -> ``done`` or ``failed``; one live sweep per (address, coin).
``tron_sweep_marks`` remembers up to which credit an address was swept.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE tron_txs (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('payout', 'sweep', 'topup')),
            ref TEXT NOT NULL,
            sender TEXT NOT NULL,
            recipient TEXT NOT NULL,
            coin TEXT NOT NULL,
            amount {amount} NOT NULL,
            tx_id TEXT NOT NULL UNIQUE,
            body TEXT NOT NULL,
            fee_bound {amount} NOT NULL,
            expiration_ms {bigint} NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('stored', 'broadcast', 'mined', 'failed', 'expired')),
            fee_paid {amount},
            activation_fee {amount},
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL,
            UNIQUE (kind, ref)
        )""",
        "CREATE INDEX tron_txs_open ON tron_txs (status)",
        """CREATE TABLE tron_sweeps (
            id TEXT PRIMARY KEY,
            address TEXT NOT NULL,
            coin TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('topup', 'sweeping', 'done', 'failed')),
            amount {amount},
            credited_through {ts} NOT NULL,
            failure_reason TEXT,
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL
        )""",
        """CREATE UNIQUE INDEX tron_sweeps_live ON tron_sweeps (address, coin)
            WHERE status IN ('topup', 'sweeping')""",
        """CREATE TABLE tron_sweep_marks (
            address TEXT NOT NULL,
            coin TEXT NOT NULL,
            swept_through {ts} NOT NULL,
            PRIMARY KEY (address, coin)
        )""",
    ]
