"""Ledger: a transaction can be reversed at most once.

``reverses`` names the ledger transaction a reversal negates. The unique
index (NULLs do not collide on either database) makes a second reversal of
the same deposit impossible even when a caller picks a different reference.
SQLite cannot add a UNIQUE column, hence the separate index.
"""


def up(dialect: str) -> list[str]:
    return [
        "ALTER TABLE ledger_transactions ADD COLUMN reverses TEXT REFERENCES ledger_transactions(id)",
        "CREATE UNIQUE INDEX ledger_transactions_reverses ON ledger_transactions (reverses)",
    ]
