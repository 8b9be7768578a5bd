"""Team members, their invitations and the account's custom roles.

``team_members.email`` is unique across every account: a member signs in
with it on the one sign-in page, so it must name one member (and the
plugin refuses an invite to an account holder's e-mail). An invite stores
only the SHA-256 of its token: the link is shown once. ``accepted_at`` set
once (a conditional UPDATE) makes the link single-use under concurrency.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE team_roles (
            id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            name TEXT NOT NULL,
            scopes TEXT NOT NULL,
            created_at {ts} NOT NULL
        )""",
        "CREATE UNIQUE INDEX team_roles_name ON team_roles (merchant_id, name)",
        """CREATE TABLE team_members (
            id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            email TEXT NOT NULL,
            role TEXT NOT NULL,
            password_hash TEXT NOT NULL,
            invited_by TEXT,
            created_at {ts} NOT NULL
        )""",
        "CREATE UNIQUE INDEX team_members_email ON team_members (email)",
        "CREATE INDEX team_members_merchant ON team_members (merchant_id, created_at)",
        """CREATE TABLE team_invites (
            id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            email TEXT NOT NULL,
            role TEXT NOT NULL,
            token_hash TEXT NOT NULL,
            invited_by TEXT,
            expires_at {ts} NOT NULL,
            accepted_at {ts},
            created_at {ts} NOT NULL
        )""",
        "CREATE UNIQUE INDEX team_invites_token ON team_invites (token_hash)",
        "CREATE INDEX team_invites_merchant ON team_invites (merchant_id, created_at)",
    ]
