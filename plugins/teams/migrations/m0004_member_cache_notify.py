"""PostgreSQL only: a change to a member, a custom role or the team's 2FA rule empties every process's caches.

What a member may do is cached per process (plugins/teams/members.py). The
plugin's own writes wait for every process (``cache_changed_everywhere``);
these triggers make a change committed anywhere else (psql, a restore script)
reach every cache too, through the core's ``orbchain_auth_changed()``
(core migration m0010). SQLite deployments are one process: the plugin's
writes empty its cache.
"""


def up(dialect: str) -> list[str]:
    if dialect != "postgresql":
        return []
    run = "AFTER INSERT OR UPDATE OR DELETE ON {table} FOR EACH STATEMENT EXECUTE FUNCTION orbchain_auth_changed()"
    return [f"CREATE TRIGGER {table}_cache_changed " + run.format(table=table)
            for table in ("team_members", "team_roles", "team_policy")]
