"""PostgreSQL only: tell every process when credentials change, and which processes are alive.

Processes cache authenticated keys and dashboard-token checks
(core/accounts/auth_cache.py). These triggers NOTIFY ``orbchain_auth`` in the very
transaction that changes a key, a rotated-out secret, or an account's
``enabled``/``token_version``, whoever runs it (the gateway, a plugin, an
operator in psql), so every process drops its cache when it commits.
``last_used_at`` touches are left out: they change nothing about access.

``gateway_nodes`` lists the live processes (a heartbeat a second,
core/infra/pg_side.py): the rate limiter divides a bucket's remaining budget among
them between syncs (core/infra/ratelimit.py), and a credential change waits until
each has acknowledged it in ``auth_acks`` (core/accounts/auth_fanout.py).

SQLite deployments are one process: invalidation there is in process and
counts stay in memory, so nothing is created.
"""

_NOTIFY_FUNCTION = """CREATE OR REPLACE FUNCTION orbchain_auth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('orbchain_auth', '');
    RETURN NULL;
END
$$"""

_KEY_COLUMNS = ("key_hash, revoked_at, expires_at, scopes, coin_allowlist, ip_allowlist, webhook_url,"
                " rate_limit_rpm, brand_id, merchant_id, kind, is_legacy")


def up(dialect: str) -> list[str]:
    if dialect != "postgresql":
        return []
    run = "EXECUTE FUNCTION orbchain_auth_changed()"
    return [
        _NOTIFY_FUNCTION,
        "CREATE TRIGGER merchants_auth_changed AFTER UPDATE OF enabled, token_version ON merchants FOR EACH ROW"
        " WHEN (OLD.enabled IS DISTINCT FROM NEW.enabled OR OLD.token_version IS DISTINCT FROM NEW.token_version) "
        + run,
        "CREATE TRIGGER merchants_auth_deleted AFTER DELETE ON merchants FOR EACH STATEMENT " + run,
        f"CREATE TRIGGER api_keys_auth_changed AFTER UPDATE OF {_KEY_COLUMNS} ON api_keys FOR EACH STATEMENT " + run,
        "CREATE TRIGGER api_keys_auth_deleted AFTER DELETE ON api_keys FOR EACH STATEMENT " + run,
        "CREATE TRIGGER api_key_secrets_auth_changed AFTER UPDATE OR DELETE ON api_key_secrets FOR EACH STATEMENT "
        + run,
        """CREATE TABLE gateway_nodes (
            node TEXT PRIMARY KEY,
            seen {ts} NOT NULL
        )""",
        """CREATE TABLE auth_acks (
            token TEXT NOT NULL,
            node TEXT NOT NULL,
            at {ts} NOT NULL,
            PRIMARY KEY (token, node)
        )""",
    ]
