"""PostgreSQL only: every process forgets its cached approval policies when one changes.

Every transfer and payout asks ``decide_hold_quote`` whether its account has
a policy, before its transaction opens; that answer comes from a
per-process cache (policy.py ``load_cached``, ``orbchain.api.cached``).
The core's ``orbchain_auth_changed()`` trigger function (core migration
m0010) NOTIFYs the channel every process listens on, so a policy changed by
any process, or by an operator in psql, empties every cache. The decision
itself (``decide``, inside the transaction) still reads the row.
"""


def up(dialect: str) -> list[str]:
    if dialect != "postgresql":
        return []
    return ["CREATE TRIGGER approval_policies_cache_changed AFTER INSERT OR UPDATE OR DELETE ON approval_policies"
            " FOR EACH STATEMENT EXECUTE FUNCTION orbchain_auth_changed()"]
