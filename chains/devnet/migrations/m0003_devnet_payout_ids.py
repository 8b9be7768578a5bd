"""Which devnet transactions the gateway sent: ``payout_id`` of a broadcast payout, NULL for a payer's.

Why: the simulated chain has no senders, so without it the custody check
(``custody.py``) could not tell money leaving the hot wallet from money
arriving elsewhere.
"""


def up(dialect: str) -> list[str]:
    return ["ALTER TABLE devnet_txs ADD COLUMN payout_id TEXT"]
