"""A sweep's ledger postings, recorded by the signer and booked by ``serve`` (issue 45).

The signer's PostgreSQL role writes no ledger (core/custody/signer_role.py):
a signing job that sees its sweep (or top-up, or sweep to cold) final
records the postings it owes here, keyed by the ledger reference they will
be booked under, and ``serve``'s job ``ledger.book_sweeps`` books each row
once (core/ledger/sweep_bookings.py). ``booked_at`` is set in the database
transaction that books; ``refused`` says why a row was never booked.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE sweep_bookings (
            reference TEXT PRIMARY KEY,
            chain TEXT NOT NULL,
            kind TEXT NOT NULL,
            postings TEXT NOT NULL,
            recorded_at {ts} NOT NULL,
            booked_at {ts},
            refused TEXT
        )""",
        "CREATE INDEX sweep_bookings_due ON sweep_bookings (recorded_at) WHERE booked_at IS NULL AND refused IS NULL",
    ]
