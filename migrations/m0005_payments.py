"""Payments, deposit addresses, deposits and the scanner's view of each chain.

``deposit_addresses`` is the address table every chain's scanner looks
outputs up in (primary key on the address: cost per look-up does not grow
with the number of addresses). ``deposits`` holds each observed transfer
once per (chain, tx_hash, output_index), however often it is re-observed.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE deposit_addresses (
            address TEXT PRIMARY KEY,
            family TEXT NOT NULL,
            network TEXT NOT NULL,
            merchant_id TEXT NOT NULL REFERENCES merchants(id),
            key_index {bigint} NOT NULL,
            user_key TEXT,
            created_at {ts} NOT NULL,
            UNIQUE (merchant_id, family, network, key_index)
        )""",
        # One standing address per (merchant, family, network, user); '' is the merchant's own.
        """CREATE UNIQUE INDEX deposit_addresses_static
            ON deposit_addresses (merchant_id, family, network, user_key) WHERE user_key IS NOT NULL""",
        """CREATE TABLE payments (
            track_id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL REFERENCES merchants(id),
            type TEXT NOT NULL,
            status TEXT NOT NULL,
            currency TEXT NOT NULL,
            pay_currency TEXT NOT NULL,
            amount TEXT,
            pay_amount {amount},
            address TEXT,
            chain TEXT,
            order_id TEXT,
            description TEXT,
            callback_url TEXT,
            user_id TEXT,
            return_url TEXT,
            cancel_url TEXT,
            email TEXT,
            accepted_coins {json},
            amount_fiat TEXT,
            fiat_currency TEXT,
            rate_locked TEXT,
            rate_locked_at {ts},
            lifetime_minutes INTEGER,
            key_id TEXT,
            paid_count INTEGER NOT NULL DEFAULT 0,
            expires_at {ts},
            paid_at {ts},
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL
        )""",
        "CREATE INDEX payments_merchant_created ON payments (merchant_id, created_at)",
        "CREATE INDEX payments_address_status ON payments (address, status)",
        "CREATE INDEX payments_status_expires ON payments (status, expires_at)",
        """CREATE TABLE deposits (
            id TEXT PRIMARY KEY,
            chain TEXT NOT NULL,
            coin TEXT NOT NULL,
            network TEXT NOT NULL,
            tx_hash TEXT NOT NULL,
            output_index INTEGER NOT NULL,
            address TEXT NOT NULL,
            amount {amount} NOT NULL,
            amount_usd TEXT,
            merchant_id TEXT NOT NULL REFERENCES merchants(id),
            user_id TEXT,
            track_id TEXT,
            block_height {bigint},
            block_hash TEXT,
            confirmations INTEGER NOT NULL DEFAULT 0,
            threshold INTEGER NOT NULL,
            status TEXT NOT NULL,
            credited {bool} NOT NULL DEFAULT FALSE,
            credit_count INTEGER NOT NULL DEFAULT 0,
            fee {amount},
            missing_since {ts},
            credited_at {ts},
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL,
            UNIQUE (chain, tx_hash, output_index)
        )""",
        "CREATE INDEX deposits_merchant_created ON deposits (merchant_id, created_at)",
        "CREATE INDEX deposits_track ON deposits (track_id)",
        "CREATE INDEX deposits_chain_status ON deposits (chain, status)",
        "CREATE INDEX deposits_chain_block ON deposits (chain, block_hash)",
        """CREATE TABLE chain_blocks (
            chain TEXT NOT NULL,
            height {bigint} NOT NULL,
            hash TEXT NOT NULL,
            PRIMARY KEY (chain, height)
        )""",
    ]
