"""The transaction that closes a dropped payout: one per payout, stored before it is broadcast.

A payout missing from the node past ``drop_after_seconds`` may still be
mined from a copy another node kept. The gateway spends its inputs back to
its own wallet (``chains/bitcoin/closing.py``) and re-credits the merchant
only once that transaction is deep enough. ``raw_tx`` is kept so a crash
between storing and broadcasting sends the same bytes, never a second
signature; ``block_hash`` remembers where it was mined (no ``-txindex``).

``bitcoin_payout_bumps`` is the child that pays for a stuck payout (CPFP,
``chains/bitcoin/bumping.py``): one per payout, spending the payout's change,
stored before it is broadcast, with the parent's fee so the payout's booked
fee is the fee both paid.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE bitcoin_payout_conflicts (
            chain TEXT NOT NULL,
            payout_id TEXT NOT NULL,
            tx_hash TEXT NOT NULL,
            raw_tx TEXT NOT NULL,
            fee {amount} NOT NULL,
            change_amount {amount} NOT NULL,
            change_key_index INTEGER NOT NULL,
            signed_height {bigint} NOT NULL,
            block_hash TEXT,
            created_at {ts} NOT NULL,
            PRIMARY KEY (chain, payout_id),
            UNIQUE (chain, tx_hash)
        )""",
        """CREATE TABLE bitcoin_payout_bumps (
            chain TEXT NOT NULL,
            payout_id TEXT NOT NULL,
            tx_hash TEXT NOT NULL,
            raw_tx TEXT NOT NULL,
            parent_tx_hash TEXT NOT NULL,
            parent_fee {amount} NOT NULL,
            fee {amount} NOT NULL,
            signed_height {bigint} NOT NULL,
            block_hash TEXT,
            created_at {ts} NOT NULL,
            PRIMARY KEY (chain, payout_id),
            UNIQUE (chain, tx_hash)
        )""",
    ]
