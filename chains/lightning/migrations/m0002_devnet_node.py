"""The devnet Lightning node's state (chains/lightning/devnet.py), in the gateway's database.

Why in the database: the server, its hosted page's pay form and
``orbchain lightning pay`` in another shell must see one simulated node, as
the on-chain devnet does. ``lightning_devnet_invoices`` holds every invoice
the node issued (``kind`` ``node``: for payments) and every invoice of the
simulated payees (``kind`` ``payee``: payout destinations), with the
preimage the payer learns; ``lightning_devnet_payments`` every payment the
node sent, one per payment hash. Unused (empty) with any other backend.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE lightning_devnet_invoices (
            payment_hash TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            preimage TEXT NOT NULL,
            bolt11 TEXT NOT NULL,
            amount_msat {amount},
            expires_at {ts} NOT NULL,
            state TEXT NOT NULL,
            settle_index {bigint} NOT NULL DEFAULT 0,
            settled_at {ts},
            amount_paid_msat {amount},
            created_at {ts} NOT NULL
        )""",
        "CREATE INDEX lightning_devnet_invoices_settled ON lightning_devnet_invoices (kind, settle_index)",
        """CREATE TABLE lightning_devnet_payments (
            payment_hash TEXT PRIMARY KEY,
            bolt11 TEXT NOT NULL,
            amount_msat {amount} NOT NULL,
            fee_msat {amount} NOT NULL,
            status TEXT NOT NULL,
            preimage TEXT,
            failure_reason TEXT,
            created_at {ts} NOT NULL
        )""",
    ]
