"""Unpaid invoices minted for anonymous visitors can be pruned (issue 29; core/payments/pruning.py).

A payment link, a tip page or a customer's enrolment mints an invoice for
whoever asks; most are never paid. Their creator gives them a retention
(``services.create_invoice(unpaid_retention_seconds=...)``), stored as
``prune_after`` (the expiry plus the retention). The core's prune job deletes
such a payment once it is past ``prune_after``, Expired or Cancelled and never
saw a deposit; its deposit address stays in ``deposit_addresses``, so money
sent to it later is still found and credited. NULL for every other payment:
the merchant's own API payments are never pruned.
"""


def up(dialect: str) -> list[str]:
    return [
        "ALTER TABLE payments ADD COLUMN prune_after {ts}",
        "CREATE INDEX payments_prune_after ON payments (prune_after) WHERE prune_after IS NOT NULL",
    ]
