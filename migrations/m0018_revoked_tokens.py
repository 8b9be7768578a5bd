"""Dashboard JWTs revoked before they expire (core/accounts/jwt_revocation.py).

* ``revoked_tokens``: one row per signed-out token, by its ``jti``, kept
  until the token would have expired (``expires_at``, indexed for pruning);
  the check reads a merchant's rows (``merchant_id``, indexed).
* On PostgreSQL an insert NOTIFYs ``orbchain_auth`` (m0010's function), so
  every process drops its cached revocations whoever writes the row. Deletes
  do not: a pruned row's token has expired, and an un-revoked token refused
  a moment longer errs on the safe side.
* Re-enabling a disabled merchant bumps ``token_version``: while disabled its
  tokens answer 403 ``merchant_disabled`` (SPEC 7), and none issued before
  the operator disabled it comes back to life afterwards.
"""

_PG_REENABLED = """CREATE OR REPLACE FUNCTION orbchain_reenabled_tokens() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.token_version := OLD.token_version + 1;
    RETURN NEW;
END
$$"""


def up(dialect: str) -> list[str]:
    statements = [
        """CREATE TABLE revoked_tokens (
            jti TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            expires_at {ts} NOT NULL,
            revoked_at {ts} NOT NULL
        )""",
        "CREATE INDEX revoked_tokens_merchant ON revoked_tokens (merchant_id)",
        "CREATE INDEX revoked_tokens_expiry ON revoked_tokens (expires_at)",
    ]
    if dialect == "postgresql":
        return statements + [
            "CREATE TRIGGER revoked_tokens_auth_changed AFTER INSERT ON revoked_tokens FOR EACH STATEMENT"
            " EXECUTE FUNCTION orbchain_auth_changed()",
            _PG_REENABLED,
            "CREATE TRIGGER merchants_reenabled_tokens BEFORE UPDATE OF enabled ON merchants FOR EACH ROW"
            " WHEN (NOT OLD.enabled AND NEW.enabled) EXECUTE FUNCTION orbchain_reenabled_tokens()",
        ]
    return statements + [
        "CREATE TRIGGER merchants_reenabled_tokens AFTER UPDATE OF enabled ON merchants FOR EACH ROW"
        " WHEN NOT OLD.enabled AND NEW.enabled"
        " BEGIN UPDATE merchants SET token_version = token_version + 1 WHERE id = NEW.id; END",
    ]
