"""Ledger transactions by time: plugins that keep a derived view (analytics) catch up by time window.

``orbchain.core.ledger.book.transactions_between`` reads a window of
``created_at``; without this index that is a scan of the whole ledger.
"""


def up(dialect: str) -> list[str]:
    return ["CREATE INDEX ledger_transactions_created ON ledger_transactions (created_at, kind)"]
