"""Custody checks (issue 45 item 4): the books proven against what the nodes hold.

``custody_checks`` keeps each run of ``orbchain custody check`` or its job
(the newest hundred): when, whether it was clean, and its report lines, the
operator's record of every result. ``custody_coins`` holds the latest
result per coin: what the nodes showed, what the ledger owes and the
difference (negative: a shortfall; NULL when the node could not say), read
by /metrics. ``payout_pauses`` names the coins whose payouts wait, and why
(a shortfall, while ``custody.pause_payouts`` is on); the payout worker
reads it, the payouts room owns it.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE custody_checks (
            id {id_pk},
            checked_at {ts} NOT NULL,
            ok {bool} NOT NULL,
            shortfalls INTEGER NOT NULL,
            source TEXT NOT NULL,
            report TEXT NOT NULL
        )""",
        "CREATE INDEX custody_checks_time ON custody_checks (checked_at)",
        """CREATE TABLE custody_coins (
            coin TEXT PRIMARY KEY,
            checked_at {ts} NOT NULL,
            status TEXT NOT NULL,
            held {amount},
            owed {amount} NOT NULL,
            difference {amount}
        )""",
        """CREATE TABLE payout_pauses (
            coin TEXT PRIMARY KEY,
            reason TEXT NOT NULL,
            since {ts} NOT NULL
        )""",
    ]
