"""The merchants' own unpaid payments past ``[payments] unpaid_retention_days`` (issue 48 item 3).

``payments.prune_unpaid`` finds, oldest expiry first, the API payments (a key
created them) left Expired or Cancelled. A partial index holds exactly those,
so a run reads its batch, not every expired payment a plugin minted or the
dashboard made (``payments_status_expires`` would walk them all and filter).
The statuses are literals in the query too: a partial index serves only a
predicate the planner can prove, which a bound parameter is not.
"""


def up(dialect: str) -> list[str]:
    return [
        "CREATE INDEX payments_unpaid_api ON payments (expires_at)"
        " WHERE key_id IS NOT NULL AND status IN ('Expired', 'Cancelled')",
    ]
