"""Spends of a hot wallet that are not payouts, counted against the signer's caps (issue 46).

A gas top-up (native coin sent to a deposit address so a token there can be
swept) and each re-signing of one at a higher fee move the hot wallet's
money like a payout does; ``signing_gate.authorize_hot_wallet_spend`` writes
one row per spend under the coin's signing lock, before it is signed, and
the caps' hour and day windows add these rows to the coin's payouts and
bumps. ``reference`` names the spend (asking again does not count twice).
No merchant: the platform pays for its own sweeps.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE hot_wallet_spends (
            reference TEXT PRIMARY KEY,
            chain TEXT NOT NULL,
            coin TEXT NOT NULL,
            kind TEXT NOT NULL,
            amount {amount} NOT NULL,
            authorized_at {ts} NOT NULL
        )""",
        "CREATE INDEX hot_wallet_spends_window ON hot_wallet_spends (coin, authorized_at)",
    ]
