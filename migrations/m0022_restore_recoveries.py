"""After a restore to an earlier point: what ``orbchain restore recover`` did (core/watching/recovery.py).

``restore_recoveries`` has one row per backup recovered from, so running the
command again for the same backup changes nothing. ``deposit_addresses.recovery``
names that backup on the addresses it re-derived and watches (the indexes it
skipped the counters past): a deposit to one is credited as a recovered
deposit, its invoice having been lost with the restore.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE restore_recoveries (
            label TEXT PRIMARY KEY,
            skip {bigint} NOT NULL,
            counters {bigint} NOT NULL DEFAULT 0,
            addresses {bigint} NOT NULL DEFAULT 0,
            recovered_at {ts} NOT NULL
        )""",
        "ALTER TABLE deposit_addresses ADD COLUMN recovery TEXT",
    ]
