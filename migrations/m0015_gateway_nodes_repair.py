"""Repair databases migrated before ``m0010_auth_notify`` was edited in place (PostgreSQL only).

``m0010`` first created ``rate_limit_nodes``; a later commit changed the same
migration to create ``gateway_nodes`` and ``auth_acks`` instead. A database
that had already applied the first version records ``core:0010`` as done and
never gets the new tables, so every process's heartbeat fails after an
upgrade. This step creates what is missing and drops the orphan; on a
database created with the current ``m0010`` it changes nothing.
``tests/test_upgrade.py`` upgrades such a database. Migrations are never
edited in place again: a change is a new step like this one.
"""


def up(dialect: str) -> list[str]:
    if dialect != "postgresql":
        return []
    return [
        """CREATE TABLE IF NOT EXISTS gateway_nodes (
            node TEXT PRIMARY KEY,
            seen {ts} NOT NULL
        )""",
        """CREATE TABLE IF NOT EXISTS auth_acks (
            token TEXT NOT NULL,
            node TEXT NOT NULL,
            at {ts} NOT NULL,
            PRIMARY KEY (token, node)
        )""",
        "DROP TABLE IF EXISTS rate_limit_nodes",
    ]
