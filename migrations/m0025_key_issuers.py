"""Every API key records the person it acts for: who created it or last rotated it (issue 42).

``api_keys.issued_by`` is ``holder`` (the account holder) or ``member:<id>`` (a team member); a payout or
transfer made with the key counts as that person's for every approval rule. ``api_key_secrets.issued_by``
is the person who held a rotated-out secret: a request made with it during its grace window counts as
theirs, not as the rotator's.

Keys issued before this migration are the holder's: the gateway did not record who made them, and only
the holder could be sure to have been allowed to (docs/decisions.md, issue 42). Payouts and transfers
recorded as ``key:<id>`` become the holder's for the same reason (their ``key_id`` column still names
the key).

On PostgreSQL the credential trigger of m0010 also fires on ``issued_by`` (a cached key carries it).
"""

_KEY_COLUMNS = ("key_hash, revoked_at, expires_at, scopes, coin_allowlist, ip_allowlist, webhook_url,"
                " rate_limit_rpm, brand_id, merchant_id, kind, is_legacy, issued_by")


def up(dialect: str) -> list[str]:
    statements = [
        "ALTER TABLE api_keys ADD COLUMN issued_by TEXT NOT NULL DEFAULT 'holder'",
        "ALTER TABLE api_key_secrets ADD COLUMN issued_by TEXT NOT NULL DEFAULT 'holder'",
        "CREATE INDEX api_keys_issued_by ON api_keys (merchant_id, issued_by)",
        "UPDATE payouts SET requested_by = 'holder' WHERE requested_by LIKE 'key:%'",
        "UPDATE transfers SET requested_by = 'holder' WHERE requested_by LIKE 'key:%'",
    ]
    if dialect == "postgresql":
        statements += [
            "DROP TRIGGER api_keys_auth_changed ON api_keys",
            f"CREATE TRIGGER api_keys_auth_changed AFTER UPDATE OF {_KEY_COLUMNS} ON api_keys FOR EACH STATEMENT"
            " EXECUTE FUNCTION orbchain_auth_changed()",
        ]
    return statements
