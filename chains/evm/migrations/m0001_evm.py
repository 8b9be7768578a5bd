"""Signed transactions, nonces and sweeps of the EVM plugin.

``evm_txs`` holds every transaction the gateway signs on an EVM chain
(payouts, sweeps, gas top-ups) BEFORE it is broadcast, so after a crash the
same bytes go out again and a nonce is never signed twice. At most one live
transaction per (chain, sender, nonce); a transaction the node refused is
``abandoned`` and its nonce may be given to the next one.

``evm_nonces`` is the next nonce per sending address, allocated under a row
lock; the node's pending count is only a floor.

``evm_sweeps`` moves one coin's balance from one deposit address to the hot
wallet: ``topup`` (gas sent to the address, tokens only) -> ``sweeping`` ->
``done`` or ``failed``; one live sweep per (chain, address, coin).
``evm_sweep_marks`` remembers up to which credited deposit an address was swept.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE evm_txs (
            id TEXT PRIMARY KEY,
            chain TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('payout', 'sweep', 'topup')),
            ref TEXT NOT NULL,
            sender TEXT NOT NULL,
            nonce {bigint} NOT NULL,
            recipient TEXT NOT NULL,
            coin TEXT NOT NULL,
            amount {amount} NOT NULL,
            tx_hash TEXT NOT NULL,
            raw TEXT NOT NULL,
            gas_limit {bigint} NOT NULL,
            max_fee_per_gas {amount} NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('stored', 'broadcast', 'mined', 'reverted', 'abandoned')),
            gas_used {bigint},
            fee_paid {amount},
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL,
            UNIQUE (chain, kind, ref)
        )""",
        """CREATE UNIQUE INDEX evm_txs_live_nonce ON evm_txs (chain, sender, nonce)
            WHERE status <> 'abandoned'""",
        "CREATE INDEX evm_txs_hash ON evm_txs (tx_hash)",
        "CREATE INDEX evm_txs_open ON evm_txs (chain, status)",
        """CREATE TABLE evm_nonces (
            chain TEXT NOT NULL,
            address TEXT NOT NULL,
            next_nonce {bigint} NOT NULL,
            PRIMARY KEY (chain, address)
        )""",
        """CREATE TABLE evm_sweeps (
            id TEXT PRIMARY KEY,
            chain TEXT NOT NULL,
            address TEXT NOT NULL,
            coin TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('topup', 'sweeping', 'done', 'failed')),
            amount {amount},
            credited_through {ts} NOT NULL,
            failure_reason TEXT,
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL
        )""",
        """CREATE UNIQUE INDEX evm_sweeps_live ON evm_sweeps (chain, address, coin)
            WHERE status IN ('topup', 'sweeping')""",
        """CREATE TABLE evm_sweep_marks (
            chain TEXT NOT NULL,
            address TEXT NOT NULL,
            coin TEXT NOT NULL,
            swept_through {ts} NOT NULL,
            PRIMARY KEY (chain, address, coin)
        )""",
    ]
