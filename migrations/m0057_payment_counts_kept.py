"""The payments list's counts (m0048) move into the general kept counts (m0056), one design for every list.

m0048's triggers and tables go; the payments are counted afresh into
``kept_counts`` (list ``payments``, keys status, type and currency) in this
migration's transaction, and the general triggers keep them from here on.
"""

from ..core.infra.kept_counts import KeptList


def _old_triggers(dialect: str) -> list[str]:
    if dialect == "postgresql":
        return ["DROP TRIGGER payments_counted ON payments", "DROP TRIGGER payments_recounted ON payments",
                "DROP TRIGGER payments_truncated ON payments", "DROP FUNCTION orbchain_payment_counted()",
                "DROP FUNCTION orbchain_payments_truncated()"]
    return ["DROP TRIGGER payments_counted_insert", "DROP TRIGGER payments_counted_delete",
            "DROP TRIGGER payments_recounted"]


def up(dialect: str) -> list[str]:
    return [
        *_old_triggers(dialect),
        "DROP TABLE payment_count_deltas",
        "DROP TABLE payment_counts",
        *KeptList("payments", ("status", "type", "currency")).counted("payments", dialect),
    ]
