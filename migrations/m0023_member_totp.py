"""Team members' own two-factor authentication (issue 36): a TOTP secret per member, kept like the holder's.

``id`` is the member's id (the teams plugin's ``team_members.id``); the
three ``totp_*`` columns mean what they mean on ``merchants``
(``core/accounts/totp_codes.py`` checks both). The core keeps it, not the
plugin, so one function checks the code of whoever acts.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE member_totp (
            id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            totp_secret TEXT,
            totp_enabled {bool} NOT NULL DEFAULT FALSE,
            totp_last_step {bigint}
        )""",
        "CREATE INDEX member_totp_merchant ON member_totp (merchant_id)",
    ]
