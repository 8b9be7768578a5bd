"""Re-signed versions of a stuck transaction (issue 46 item 2): same nonce, higher fees.

A payout or gas top-up waiting in the mempool because the base fee rose
above its maxFee is re-signed at the SAME nonce with the same recipient,
value and data (``chains/evm/bumping.py``). Only one of the versions can be
mined (they share a nonce), but any of them may be: every version's hash
and bytes are kept here, stored before it is broadcast, and the receipts of
all of them are checked.

``evm_txs`` stays the one row per transaction (its ``tx_hash`` is the first
version's, the stable name ledger references use); ``signed_height`` is the
tip when that first version was signed (NULL for rows signed before this
migration: treated as long ago), ``mined_hash`` the version that was mined.
"""


def up(dialect: str) -> list[str]:
    return [
        "ALTER TABLE evm_txs ADD COLUMN signed_height {bigint}",
        "ALTER TABLE evm_txs ADD COLUMN mined_hash TEXT",
        """CREATE TABLE evm_tx_versions (
            tx_id TEXT NOT NULL REFERENCES evm_txs (id),
            version INTEGER NOT NULL CHECK (version >= 1),
            chain TEXT NOT NULL,
            tx_hash TEXT NOT NULL,
            raw TEXT NOT NULL,
            max_fee_per_gas {amount} NOT NULL,
            max_priority_fee_per_gas {amount} NOT NULL,
            signed_height {bigint} NOT NULL,
            created_at {ts} NOT NULL,
            PRIMARY KEY (tx_id, version),
            UNIQUE (chain, tx_hash)
        )""",
    ]
