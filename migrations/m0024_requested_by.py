"""Who asked for a payout or transfer, and a transfer held for approval (issue 36).

``requested_by``: ``holder``, ``member:<id>``, ``key:<id>``, NULL for a job
or plugin; the approval policy refuses an approval by the requester, and the
dashboard says who asked. ``transfers.status``: NULL for a transfer that
moved (every row before this), ``held`` while a plugin holds it
(``decide_transfer_hold``), ``rejected``/``expired`` when it never moved.
"""


def up(dialect: str) -> list[str]:
    return [
        "ALTER TABLE payouts ADD COLUMN requested_by TEXT",
        "ALTER TABLE transfers ADD COLUMN requested_by TEXT",
        "ALTER TABLE transfers ADD COLUMN status TEXT",
    ]
