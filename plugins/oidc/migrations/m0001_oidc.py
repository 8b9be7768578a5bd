"""Identity-provider sign-in: pending logins (single-use state) and linked identities.

``oidc_logins`` holds one row per started sign-in, keyed by a hash of its
``state``; the callback deletes the row it uses, so a state works once in
any process of a multi-worker deployment. ``oidc_identities`` remembers
which merchant a provider's subject belongs to, so a later sign-in finds
the account even after the e-mail changed at the provider.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE oidc_logins (
            state_hash TEXT PRIMARY KEY,
            nonce TEXT NOT NULL,
            code_verifier TEXT NOT NULL,
            created_at {ts} NOT NULL,
            expires_at {ts} NOT NULL
        )""",
        "CREATE INDEX oidc_logins_expiry ON oidc_logins (expires_at)",
        """CREATE TABLE oidc_identities (
            issuer TEXT NOT NULL,
            subject TEXT NOT NULL,
            merchant_id TEXT NOT NULL,
            email TEXT NOT NULL,
            created_at {ts} NOT NULL,
            last_sign_in_at {ts} NOT NULL,
            PRIMARY KEY (issuer, subject)
        )""",
        "CREATE INDEX oidc_identities_merchant ON oidc_identities (merchant_id)",
    ]
