"""An account's team-wide rules: ``require_2fa`` limits members without their own 2FA to reading."""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE team_policy (
            merchant_id TEXT PRIMARY KEY,
            require_2fa {bool} NOT NULL DEFAULT FALSE,
            updated_at {ts} NOT NULL
        )""",
    ]
