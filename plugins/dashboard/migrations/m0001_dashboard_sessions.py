"""The dashboard plugin's own table (never a core one).

* ``dashboard_ended_sessions``: browser sessions signed out, by the session
  id in their cookie, kept until the JWT inside would have expired anyway
  (``expires_at``, indexed for the prune job). A cookie copied before logout
  is refused while its token could still work.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE dashboard_ended_sessions (
            session_id TEXT PRIMARY KEY,
            expires_at {ts} NOT NULL
        )""",
        "CREATE INDEX dashboard_ended_sessions_expiry ON dashboard_ended_sessions (expires_at)",
    ]
