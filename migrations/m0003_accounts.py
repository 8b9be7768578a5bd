"""Accounts: session invalidation and TOTP replay protection.

``token_version`` is copied into every dashboard JWT; bumping it (password
change) makes every older token fail. ``totp_last_step`` remembers the last
accepted TOTP time-step so one code cannot be used twice in its window.
"""


def up(dialect: str) -> list[str]:
    return [
        "ALTER TABLE merchants ADD COLUMN token_version INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE merchants ADD COLUMN totp_last_step {bigint}",
        "CREATE INDEX api_keys_merchant_active ON api_keys (merchant_id, is_legacy, revoked_at)",
    ]
