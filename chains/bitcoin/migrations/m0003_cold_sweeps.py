"""Sweeps of the hot wallet's excess to the operator's cold address (issue 45 item 3, ``chains/bitcoin/cold_sweep.py``).

One row per sweep, stored with its signed bytes (``raw_tx``) and its inputs'
reservation (``bitcoin_wallet_spends`` under the sweep's id) in one
transaction before anything is broadcast: a crash sends the same bytes again,
never a second signature. ``status`` is ``sent`` until the transaction is
``payout_confirmations`` deep and booked, then ``done``. ``cold_index``: the
index of the cold xpub's address the sweep paid (NULL for a fixed address),
so the custody check counts it only when the configured xpub derives it.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE bitcoin_cold_sweeps (
            id TEXT PRIMARY KEY,
            chain TEXT NOT NULL,
            coin TEXT NOT NULL,
            destination TEXT NOT NULL,
            cold_index INTEGER,
            amount {amount} NOT NULL,
            fee {amount} NOT NULL,
            tx_hash TEXT NOT NULL UNIQUE,
            raw_tx TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL
        )""",
        "CREATE INDEX bitcoin_cold_sweeps_live ON bitcoin_cold_sweeps (chain, status)",
    ]
