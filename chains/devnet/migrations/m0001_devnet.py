"""The simulated chain lives in the gateway's own database.

Why tables and not memory: the CLI (another process) and the server must see
one chain. ``devnet_blocks`` holds only the current best chain (a reorg
deletes the replaced blocks); ``devnet_txs`` holds every transfer ever sent,
with ``block_height`` NULL while it waits in the mempool or after it was
dropped.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE devnet_blocks (
            height {bigint} PRIMARY KEY,
            hash TEXT NOT NULL UNIQUE,
            parent_hash TEXT NOT NULL,
            created_at {ts} NOT NULL
        )""",
        """CREATE TABLE devnet_txs (
            tx_hash TEXT NOT NULL,
            output_index INTEGER NOT NULL,
            coin TEXT NOT NULL,
            address TEXT NOT NULL,
            amount {amount} NOT NULL,
            block_height {bigint},
            status TEXT NOT NULL CHECK (status IN ('mempool', 'mined', 'dropped')),
            created_at {ts} NOT NULL,
            PRIMARY KEY (tx_hash, output_index)
        )""",
        "CREATE INDEX devnet_txs_block ON devnet_txs (block_height)",
        "CREATE INDEX devnet_txs_status ON devnet_txs (status)",
    ]
