"""Joining needs a proof of the invited address (issue 42): a link mailed to it, or an identity provider.

``team_invites.token_hash`` keeps naming the invitation's *page* (the link the
inviter may see and share): it shows the invitation and starts a proof, it
no longer joins by itself. ``mail_hash`` is the SHA-256 of the join link
mailed to the invited address (NULL until one was sent; a new send replaces
it, so only the latest mailed link joins); ``mails_sent`` caps re-sends.
Invitations pending at this migration keep their old link as their page:
joining through them now needs the mailed link or the identity provider.

``team_members.proven_by`` says how the member proved their address:
``mail`` or ``identity_provider``; NULL for members who joined before a
proof was required. Those keep signing in with their password; an
identity-provider sign-in never matches them (or anyone) by e-mail.
"""


def up(dialect: str) -> list[str]:
    return [
        "ALTER TABLE team_invites ADD COLUMN mail_hash TEXT",
        "ALTER TABLE team_invites ADD COLUMN mails_sent INTEGER NOT NULL DEFAULT 0",
        "CREATE UNIQUE INDEX team_invites_mail ON team_invites (mail_hash)",
        "ALTER TABLE team_members ADD COLUMN proven_by TEXT",
    ]
