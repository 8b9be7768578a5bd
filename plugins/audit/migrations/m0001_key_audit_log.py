"""The per-key audit log (SPEC 5.2): append-only, enforced by the database itself.

Triggers refuse UPDATE and DELETE on both databases, so neither a bug in
this plugin nor a stray query can rewrite history; only dropping the table
(an operator's deliberate act) removes rows. Rows are read newest first per
key, hence the (key_id, id) index.
"""

_REFUSE = "the key audit log is append-only"


def up(dialect: str) -> list[str]:
    statements = [
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
    ]
    if dialect == "postgresql":
        statements += [
            f"""CREATE FUNCTION key_audit_log_refuse() RETURNS trigger AS $$
            BEGIN RAISE EXCEPTION '{_REFUSE}'; END; $$ LANGUAGE plpgsql""",
            """CREATE TRIGGER key_audit_log_append_only BEFORE UPDATE OR DELETE ON key_audit_log
            FOR EACH ROW EXECUTE FUNCTION key_audit_log_refuse()""",
            # TRUNCATE skips row triggers: refuse it too.
            """CREATE TRIGGER key_audit_log_no_truncate BEFORE TRUNCATE ON key_audit_log
            FOR EACH STATEMENT EXECUTE FUNCTION key_audit_log_refuse()""",
        ]
    else:
        statements += [
            f"""CREATE TRIGGER key_audit_log_no_update BEFORE UPDATE ON key_audit_log
            BEGIN SELECT RAISE(ABORT, '{_REFUSE}'); END""",
            f"""CREATE TRIGGER key_audit_log_no_delete BEFORE DELETE ON key_audit_log
            BEGIN SELECT RAISE(ABORT, '{_REFUSE}'); END""",
        ]
    return statements
