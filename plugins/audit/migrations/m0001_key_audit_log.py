"""The per-key audit log (SPEC 5.2): append-only, enforced by the database itself.

Triggers refuse UPDATE and DELETE on both databases (``core.infra.migrate.append_only``,
which the activity plugin's security log uses too), so neither a bug in
this plugin nor a stray query can rewrite history; only dropping the table
(an operator's deliberate act) removes rows. Rows are read newest first per
key, hence the (key_id, id) index.
"""

from ....api import append_only

_REFUSE = "the key audit log is append-only"


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE key_audit_log (
            id {id_pk},
            key_id TEXT NOT NULL,
            merchant_id TEXT NOT NULL,
            method TEXT NOT NULL,
            route TEXT NOT NULL,
            status INTEGER NOT NULL,
            request_id TEXT NOT NULL,
            client_ip TEXT NOT NULL,
            created_at {ts} NOT NULL
        )""",
        "CREATE INDEX key_audit_log_key ON key_audit_log (key_id, id)",
        *append_only("key_audit_log", _REFUSE, dialect),
    ]
