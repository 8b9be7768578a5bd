"""Payment links (SPEC 2.16, 4.11, 4.14): the plugin's own tables, never a core one.

``uses`` is the number of invoices the link minted; it is incremented in the
transaction that stores each invoice, next to the ``payment_link_invoices``
row naming it, so the count is exact under concurrency and matches the rows.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE payment_links (
            id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            slug TEXT NOT NULL UNIQUE,
            coin TEXT NOT NULL,
            amount {amount},
            amount_fiat TEXT,
            fiat_currency TEXT,
            lifetime_minutes {bigint},
            description TEXT,
            enabled {bool} NOT NULL,
            uses {bigint} NOT NULL,
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL
        )""",
        "CREATE INDEX payment_links_merchant ON payment_links (merchant_id, created_at)",
        """CREATE TABLE payment_link_invoices (
            track_id TEXT PRIMARY KEY,
            link_id TEXT NOT NULL,
            created_at {ts} NOT NULL
        )""",
        "CREATE INDEX payment_link_invoices_link ON payment_link_invoices (link_id, created_at)",
    ]
