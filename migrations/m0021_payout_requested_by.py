"""Who asked for a payout (issue 36): ``holder``, ``member:<id>``, ``key:<id>``, NULL for a job or plugin.

The approval policy refuses an approval by the payout's own requester, and
the dashboard says who requested it. Rows from before stay NULL.
"""


def up(dialect: str) -> list[str]:
    return ["ALTER TABLE payouts ADD COLUMN requested_by TEXT"]
