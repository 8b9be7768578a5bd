"""The account's security log: append-only in the database itself, like the key audit log.

``security_events`` holds one row per announced event (``security_event``
hook); ``security_event_dismissals`` records which alerts the account
holder dismissed from the dashboard's home page (a row per dismissal, so
the log itself never changes). Both refuse UPDATE and DELETE on both
databases (``core.infra.migrate.append_only``, the mechanism the audit plugin's
log uses). Rows are read newest first per merchant, hence the index.
"""

from ....api import append_only


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE security_events (
            id {id_pk},
            merchant_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            details TEXT NOT NULL,
            client_ip TEXT,
            user_agent TEXT,
            request_id TEXT,
            alert {bool} NOT NULL,
            created_at {ts} NOT NULL
        )""",
        "CREATE INDEX security_events_merchant ON security_events (merchant_id, id)",
        *append_only("security_events", "the security log is append-only", dialect),
        """CREATE TABLE security_event_dismissals (
            event_id {bigint} PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            dismissed_at {ts} NOT NULL
        )""",
        *append_only("security_event_dismissals", "dismissals are append-only", dialect),
    ]
