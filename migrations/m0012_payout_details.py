"""Payouts remember the public details their chain reports (a Lightning payout's invoice and preimage).

A payout sender may return fields beyond the transaction hash
(``SignedPayout.details``, ``PayoutStatus.details``): they are stored as JSON
with the payout and merged into its view and webhook body. NULL for on-chain
payouts.
"""


def up(dialect: str) -> list[str]:
    return ["ALTER TABLE payouts ADD COLUMN details {json}"]
