"""Core schema: merchants, API keys, the double-entry ledger and shared counters.

Amount columns are ``{amount}``: NUMERIC(78,0) on PostgreSQL, integer text
on SQLite (see core/infra/migrate.py). Literal braces are doubled for ``format``.
"""


def up(dialect: str) -> list[str]:
    return [
        # -- accounts --------------------------------------------------------
        """CREATE TABLE merchants (
            id TEXT PRIMARY KEY,
            account_id TEXT NOT NULL UNIQUE,
            email TEXT NOT NULL UNIQUE,
            password_hash TEXT NOT NULL,
            key_account {bigint} NOT NULL UNIQUE,
            fee_percent TEXT,
            accepted_coins {json} NOT NULL,
            confirmations {json} NOT NULL DEFAULT '{{}}',
            webhook_url TEXT,
            webhook_secret TEXT,
            totp_secret TEXT,
            totp_enabled {bool} NOT NULL DEFAULT FALSE,
            enabled {bool} NOT NULL DEFAULT TRUE,
            default_settlement_coin TEXT,
            customer_static_mode {bool} NOT NULL DEFAULT FALSE,
            referrer_id TEXT,
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL
        )""",
        """CREATE TABLE api_keys (
            id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL REFERENCES merchants(id),
            kind TEXT NOT NULL,
            label TEXT,
            prefix TEXT NOT NULL,
            key_hash TEXT NOT NULL UNIQUE,
            previous_hash TEXT,
            previous_valid_until {ts},
            scopes {json} NOT NULL DEFAULT '[]',
            coin_allowlist {json} NOT NULL DEFAULT '[]',
            ip_allowlist {json} NOT NULL DEFAULT '[]',
            webhook_url TEXT,
            webhook_secret TEXT,
            rate_limit_rpm INTEGER,
            brand_id TEXT,
            is_legacy {bool} NOT NULL DEFAULT FALSE,
            last_used_at {ts},
            revoked_at {ts},
            expires_at {ts},
            created_at {ts} NOT NULL
        )""",
        "CREATE INDEX api_keys_merchant ON api_keys (merchant_id)",
        "CREATE INDEX api_keys_previous_hash ON api_keys (previous_hash)",
        # -- ledger ------------------------------------------------------------
        """CREATE TABLE ledger_transactions (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            reference TEXT NOT NULL UNIQUE,
            merchant_id TEXT,
            memo TEXT,
            created_at {ts} NOT NULL
        )""",
        """CREATE TABLE ledger_postings (
            id {id_pk},
            transaction_id TEXT NOT NULL REFERENCES ledger_transactions(id),
            account TEXT NOT NULL,
            coin TEXT NOT NULL,
            amount {amount} NOT NULL,
            created_at {ts} NOT NULL
        )""",
        "CREATE INDEX ledger_postings_account ON ledger_postings (account, coin)",
        "CREATE INDEX ledger_postings_tx ON ledger_postings (transaction_id)",
        """CREATE TABLE ledger_balances (
            account TEXT NOT NULL,
            coin TEXT NOT NULL,
            balance {amount} NOT NULL,
            updated_at {ts} NOT NULL,
            PRIMARY KEY (account, coin)
        )""",
        # -- shared infrastructure ----------------------------------------------
        """CREATE TABLE counters (
            name TEXT PRIMARY KEY,
            value {bigint} NOT NULL
        )""",
        """CREATE TABLE rate_limit_hits (
            bucket TEXT NOT NULL,
            window_start {ts} NOT NULL,
            hits INTEGER NOT NULL,
            PRIMARY KEY (bucket, window_start)
        )""",
    ]
