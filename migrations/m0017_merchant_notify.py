"""PostgreSQL only: any change to a merchant row empties every process's caches.

Payment creation reads the merchant row (accepted coins, key account,
customer static mode) from a per-process cache (core/accounts/merchants.py,
``merchant_for_payments``). The settings functions wait until every process
has dropped it (core/accounts/auth_fanout.py); this trigger covers every other
writer (a plugin, an operator in psql), as m0010's triggers do for
credentials. It replaces m0010's narrower trigger on ``enabled`` and
``token_version``, which it includes.
"""


def up(dialect: str) -> list[str]:
    if dialect != "postgresql":
        return []
    return [
        "DROP TRIGGER IF EXISTS merchants_auth_changed ON merchants",
        "CREATE TRIGGER merchants_changed AFTER UPDATE ON merchants FOR EACH STATEMENT"
        " EXECUTE FUNCTION orbchain_auth_changed()",
    ]
