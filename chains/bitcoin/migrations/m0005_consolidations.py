"""Deposit outputs consolidated into the hot wallet (issue 45 item 3, ``chains/bitcoin/consolidation.py``).

One row per consolidation transaction, stored with its signed bytes
(``raw_tx``) and its inputs' reservation (``bitcoin_wallet_spends`` under the
row's id; its one output a ``bitcoin_change_outputs`` row under that id) in
one transaction before anything is broadcast: a crash sends the same bytes
again, never a second signature. ``inputs`` is how many deposit outputs it
spends, ``amount`` its one output and ``fee`` what the inputs held beyond it
(the fee paid, booked as is). ``status`` is ``sent`` until it is
``payout_confirmations`` deep and booked, then ``done``.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE bitcoin_consolidations (
            id TEXT PRIMARY KEY,
            chain TEXT NOT NULL,
            coin TEXT NOT NULL,
            inputs INTEGER NOT NULL,
            amount {amount} NOT NULL,
            fee {amount} NOT NULL,
            tx_hash TEXT NOT NULL UNIQUE,
            raw_tx TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL
        )""",
        "CREATE INDEX bitcoin_consolidations_live ON bitcoin_consolidations (chain, status)",
    ]
