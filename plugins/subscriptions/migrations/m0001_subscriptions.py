"""Plans, subscriptions and their invoices (SPEC 2.13, 3.4): the plugin's own tables.

``subscription_invoices`` is the billing tick's ledger of claims: one row per
(subscription, period, attempt), unique, written and committed *before* the
core's payment is created with the row's pre-chosen ``track_id``. That is
what makes minting idempotent across processes and crashes (docs/subscriptions.md).
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE subscription_plans (
            id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            label TEXT NOT NULL,
            amount_usd TEXT NOT NULL,
            interval_sec {bigint} NOT NULL,
            accepted_coins TEXT NOT NULL,
            enabled {bool} NOT NULL,
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL
        )""",
        "CREATE INDEX subscription_plans_merchant ON subscription_plans (merchant_id, created_at)",
        """CREATE TABLE subscriptions (
            id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            plan_id TEXT NOT NULL REFERENCES subscription_plans (id),
            status TEXT NOT NULL,
            customer_ref TEXT,
            customer_email TEXT,
            next_billing_at {ts} NOT NULL,
            current_period_start {ts},
            current_period_end {ts},
            grace_count INTEGER NOT NULL,
            pending_invoice_id TEXT,
            magic_token TEXT NOT NULL,
            token_hash TEXT NOT NULL UNIQUE,
            last_error TEXT,
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL,
            ended_at {ts}
        )""",
        "CREATE INDEX subscriptions_merchant ON subscriptions (merchant_id, created_at)",
        "CREATE INDEX subscriptions_due ON subscriptions (status, next_billing_at)",
        """CREATE TABLE subscription_invoices (
            id TEXT PRIMARY KEY,
            subscription_id TEXT NOT NULL REFERENCES subscriptions (id),
            merchant_id TEXT NOT NULL,
            period_start {ts} NOT NULL,
            period_end {ts} NOT NULL,
            attempt INTEGER NOT NULL,
            track_id TEXT NOT NULL UNIQUE,
            amount_usd TEXT NOT NULL,
            status TEXT NOT NULL,
            pay_url TEXT,
            expires_at {ts},
            paid_coin TEXT,
            paid_amount TEXT,
            created_at {ts} NOT NULL,
            resolved_at {ts},
            UNIQUE (subscription_id, period_start, attempt)
        )""",
        "CREATE INDEX subscription_invoices_open ON subscription_invoices (status, created_at)",
        "CREATE INDEX subscription_invoices_history ON subscription_invoices (subscription_id, created_at)",
    ]
