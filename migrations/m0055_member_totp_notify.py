"""PostgreSQL only: a member's second factor turned on or off empties every process's access caches (issue 47).

The teams plugin caches what a member may do (plugins/teams/members.py), and
the team-wide 2FA rule limits a member without their own second factor to
reads, so ``member_totp.totp_enabled`` is part of that answer. The core's
functions wait for every process themselves (core/accounts/second_factor.py);
this trigger covers a change made anywhere else (psql). Only ``totp_enabled``
and deletions: a code's use (``totp_last_step``) changes nobody's access and
must not empty the caches on every sign-in.
"""


def up(dialect: str) -> list[str]:
    if dialect != "postgresql":
        return []
    run = "FOR EACH STATEMENT EXECUTE FUNCTION orbchain_auth_changed()"
    return [f"CREATE TRIGGER member_totp_auth_changed AFTER UPDATE OF totp_enabled ON member_totp {run}",
            f"CREATE TRIGGER member_totp_auth_deleted AFTER DELETE ON member_totp {run}"]
