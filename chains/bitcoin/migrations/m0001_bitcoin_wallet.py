"""The hot wallet's own bookkeeping, per chain (bitcoin, litecoin, dogecoin).

What the gateway can spend is derived, not stored: credited deposit outputs
(``deposits``) plus the change of its own payouts (``bitcoin_change_outputs``).
``bitcoin_wallet_spends`` is the exclusion list: an output reserved by a
signed payout (``state`` reserved), or known to be gone (``spent``: our payout
confirmed, or the node says someone else spent it). The primary key makes two
payouts reserving one output impossible, also across processes.
``bitcoin_payout_txs`` remembers where each payout was signed and which block
confirmed it, so its confirmations are known without ``-txindex``.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE bitcoin_wallet_spends (
            chain TEXT NOT NULL,
            tx_hash TEXT NOT NULL,
            output_index INTEGER NOT NULL,
            payout_id TEXT,
            state TEXT NOT NULL CHECK (state IN ('reserved', 'spent')),
            created_at {ts} NOT NULL,
            PRIMARY KEY (chain, tx_hash, output_index)
        )""",
        "CREATE INDEX bitcoin_wallet_spends_payout ON bitcoin_wallet_spends (payout_id)",
        """CREATE TABLE bitcoin_change_outputs (
            chain TEXT NOT NULL,
            tx_hash TEXT NOT NULL,
            output_index INTEGER NOT NULL,
            amount {amount} NOT NULL,
            key_index INTEGER NOT NULL,
            payout_id TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'available')),
            created_at {ts} NOT NULL,
            PRIMARY KEY (chain, tx_hash, output_index)
        )""",
        "CREATE INDEX bitcoin_change_outputs_payout ON bitcoin_change_outputs (payout_id)",
        """CREATE TABLE bitcoin_payout_txs (
            chain TEXT NOT NULL,
            tx_hash TEXT NOT NULL,
            payout_id TEXT NOT NULL,
            signed_height {bigint} NOT NULL,
            block_hash TEXT,
            created_at {ts} NOT NULL,
            PRIMARY KEY (chain, tx_hash)
        )""",
        "CREATE INDEX bitcoin_payout_txs_payout ON bitcoin_payout_txs (payout_id)",
    ]
