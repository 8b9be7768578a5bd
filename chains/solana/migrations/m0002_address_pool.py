"""Deposit addresses the signer pre-derives for a seedless serve (``chains/solana/pool.py``).

Solana's addresses are hardened-only (SLIP-10 ed25519), so no xpub yields
them: ``orbchain signer`` derives each merchant's next indexes ahead, under
the merchant's HD account, and a seedless ``serve`` hands the lowest unused
one out (``claimed_at`` set in one statement). The address's key is found
later as any deposit address's: the core's address row holds the merchant
and ``key_index``, so the signer can sweep it.

``solana_hot_wallet`` (one row) is the hot wallet's address as the signer
derived it (account 0, index 0), for a seedless serve's custody check.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE solana_address_pool (
            address TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            key_index {bigint} NOT NULL,
            created_at {ts} NOT NULL,
            claimed_at {ts},
            UNIQUE (merchant_id, key_index)
        )""",
        "CREATE INDEX solana_address_pool_free ON solana_address_pool (merchant_id, key_index)"
        " WHERE claimed_at IS NULL",
        """CREATE TABLE solana_hot_wallet (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            address TEXT NOT NULL,
            updated_at {ts} NOT NULL
        )""",
    ]
