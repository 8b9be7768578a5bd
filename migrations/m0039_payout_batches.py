"""Batch payouts share one transaction (issue 46): ``payouts.batch_id`` names the batch request a payout came from.

The worker signs the queued items of one batch on a chain that declares
``Capability.BATCH_PAYOUTS`` as one transaction (one output per item); NULL
for every other payout. The index finds a batch's siblings.
"""


def up(dialect: str) -> list[str]:
    return ["ALTER TABLE payouts ADD COLUMN batch_id TEXT",
            "CREATE INDEX payouts_batch ON payouts (batch_id) WHERE batch_id IS NOT NULL"]
