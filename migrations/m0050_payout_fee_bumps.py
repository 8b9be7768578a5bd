"""The extra fee of each bump of a stuck payout, counted against the signer's caps (issue 46 item 2).

A bump (a child paying for the payout, a replacement paying more) is a new
signature that moves money: its extra fee, never the payout's amount again.
``signing_gate.authorize_fee_bump`` writes one row per bump under the coin's
signing lock, before the bump is signed; ``reference`` (the chain's name for
the bump) makes asking again for the same bump harmless, and the window sums
of the caps add these rows to the payouts authorized in the hour and day.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE payout_fee_bumps (
            reference TEXT PRIMARY KEY,
            payout_id TEXT NOT NULL,
            merchant_id TEXT NOT NULL,
            coin TEXT NOT NULL,
            fee {amount} NOT NULL,
            authorized_at {ts} NOT NULL
        )""",
        "CREATE INDEX payout_fee_bumps_window ON payout_fee_bumps (coin, authorized_at)",
    ]
