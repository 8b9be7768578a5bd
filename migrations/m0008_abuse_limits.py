"""Rotated-out key secrets with their own grace, and failure lockouts.

``api_key_secrets`` holds every rotated-out secret of a scoped key in its
own row with its own ``valid_until``, so rotating twice inside the grace
window no longer ends the first secret's grace (SPEC 4.9). Revoking the key
kills them all through the key row's ``revoked_at``. The old single
``previous_hash`` value is carried over.

``auth_lockouts`` counts failed TOTP codes and failed logins per account
(subject) and holds the lockout, so it survives restarts and is shared by
every process on PostgreSQL. Rows are written on failures only.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE api_key_secrets (
            key_hash TEXT PRIMARY KEY,
            key_id TEXT NOT NULL REFERENCES api_keys(id),
            valid_until {ts} NOT NULL,
            created_at {ts} NOT NULL
        )""",
        "CREATE INDEX api_key_secrets_key ON api_key_secrets (key_id)",
        """INSERT INTO api_key_secrets (key_hash, key_id, valid_until, created_at)
            SELECT previous_hash, id, previous_valid_until, created_at FROM api_keys
            WHERE previous_hash IS NOT NULL AND previous_valid_until IS NOT NULL""",
        "UPDATE api_keys SET previous_hash = NULL, previous_valid_until = NULL",
        """CREATE TABLE auth_lockouts (
            subject TEXT PRIMARY KEY,
            failures INTEGER NOT NULL,
            window_start {ts} NOT NULL,
            locked_until {ts}
        )""",
        "CREATE INDEX auth_lockouts_window ON auth_lockouts (window_start)",
    ]
