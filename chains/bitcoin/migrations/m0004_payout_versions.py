"""Every version of a payout replaced by fee (BIP 125; ``chains/bitcoin/replacing.py``).

A replacement pays the same outputs from the same inputs with less change
(more fee), so the versions of one payout exclude each other: exactly one can
be mined. Each is stored before it is broadcast, keyed by the txid the payout
was first signed as (``original_tx_hash``; version 0 is that transaction, its
bytes and fee copied here when the first replacement is made) so the status,
the closing of a dropped payout and the change follow whichever version is
mined. ``accepted`` is set once a node took it: a version no node ever took
(refused as a replacement) is deleted, one that was taken never is (another
node may still mine it). ``block_hash`` remembers where it was mined (no
``-txindex``).
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE bitcoin_payout_versions (
            chain TEXT NOT NULL,
            original_tx_hash TEXT NOT NULL,
            version INTEGER NOT NULL,
            tx_hash TEXT NOT NULL,
            raw_tx TEXT NOT NULL,
            fee {amount} NOT NULL,
            change_amount {amount} NOT NULL,
            signed_height {bigint} NOT NULL,
            accepted INTEGER NOT NULL DEFAULT 0,
            block_hash TEXT,
            created_at {ts} NOT NULL,
            PRIMARY KEY (chain, original_tx_hash, version),
            UNIQUE (chain, tx_hash)
        )""",
    ]
