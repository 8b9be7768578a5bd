"""The second step of every sign-in, and recovery codes (issue 42).

``recovery_codes``: ten per person with 2FA on (the account holder or a team
member: ``owner_id`` is the merchant id or the member id, as for their TOTP
secret and lockout), each stored as SHA-256 of 80 random bits, spent once
(``used_at``). ``sign_in_steps``: a sign-in that passed its first factor
(a password, an identity provider) and waits for the person's code, keyed
by a hash of a random value the browser holds in a cookie, single-use,
expiring; ``member_id`` NULL for the holder; ``context`` is what the page
that began it gets back (where to go next, a landing's browser binding).
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE recovery_codes (
            code_hash TEXT PRIMARY KEY,
            owner_id TEXT NOT NULL,
            merchant_id TEXT NOT NULL,
            created_at {ts} NOT NULL,
            used_at {ts}
        )""",
        "CREATE INDEX recovery_codes_owner ON recovery_codes (owner_id)",
        """CREATE TABLE sign_in_steps (
            step_hash TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            member_id TEXT,
            email TEXT NOT NULL,
            method TEXT NOT NULL,
            context TEXT NOT NULL,
            created_at {ts} NOT NULL,
            expires_at {ts} NOT NULL
        )""",
        "CREATE INDEX sign_in_steps_expiry ON sign_in_steps (expires_at)",
    ]
