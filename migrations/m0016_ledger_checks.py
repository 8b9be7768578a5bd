"""Results of ``ledger check`` runs, so operators can alert on the last result and its age.

Written by the ``ledger.check`` job and by ``orbchain ledger check``; read
at scrape time by ``/metrics`` (``orbchain_ledger_check_ok``, ``..._age_seconds``).
Only the newest rows matter: the job prunes old ones.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE ledger_checks (
            id {id_pk},
            checked_at {ts} NOT NULL,
            ok {bool} NOT NULL,
            problems INTEGER NOT NULL,
            balances_checked INTEGER NOT NULL,
            transactions_checked INTEGER NOT NULL,
            source TEXT NOT NULL
        )""",
        "CREATE INDEX ledger_checks_checked_at ON ledger_checks (checked_at)",
    ]
