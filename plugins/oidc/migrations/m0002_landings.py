"""Sign-in landings: the fragment payload bound to the browser that started the sign-in (issue 29).

``oidc_logins.binding_hash`` is SHA-256 of a random browser key the start
route sets as a cookie on the app's path; the callback copies it into an
``oidc_landings`` row keyed by a hash of the payload's ``landing`` value.
The dashboard spends the row (``DELETE ... RETURNING``) only for the
browser holding that key, so the payload works once, in that browser,
whichever worker receives it. Rows from before this migration carry an
empty hash, which no key matches.
"""


def up(dialect: str) -> list[str]:
    return [
        "ALTER TABLE oidc_logins ADD COLUMN binding_hash TEXT NOT NULL DEFAULT ''",
        """CREATE TABLE oidc_landings (
            landing_hash TEXT PRIMARY KEY,
            binding_hash TEXT NOT NULL,
            token_hash TEXT NOT NULL,
            merchant_id TEXT NOT NULL,
            created_at {ts} NOT NULL,
            expires_at {ts} NOT NULL
        )""",
        "CREATE INDEX oidc_landings_expiry ON oidc_landings (expires_at)",
    ]
