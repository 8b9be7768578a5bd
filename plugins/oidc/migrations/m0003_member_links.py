"""Identities linked by team members, and the second-factor step after the provider (issue 36).

``oidc_identities.member_id`` (nullable) names the team member a linked
identity signs in as; NULL keeps the old meaning, the account holder.
``oidc_logins.link_merchant_id``/``link_member_id`` mark a started sign-in
as a signed-in member's link request, so the callback links rather than
looks up. ``oidc_second_factor`` holds a member's sign-in that passed the
provider and waits for their own TOTP code: keyed by a hash of a random
value the browser holds in a cookie, single-use, expiring.
"""


def up(dialect: str) -> list[str]:
    return [
        "ALTER TABLE oidc_identities ADD COLUMN member_id TEXT",
        "ALTER TABLE oidc_logins ADD COLUMN link_merchant_id TEXT",
        "ALTER TABLE oidc_logins ADD COLUMN link_member_id TEXT",
        """CREATE TABLE oidc_second_factor (
            step_hash TEXT PRIMARY KEY,
            binding_hash TEXT NOT NULL,
            merchant_id TEXT NOT NULL,
            member_id TEXT NOT NULL,
            email TEXT NOT NULL,
            created_at {ts} NOT NULL,
            expires_at {ts} NOT NULL
        )""",
        "CREATE INDEX oidc_second_factor_expiry ON oidc_second_factor (expires_at)",
    ]
