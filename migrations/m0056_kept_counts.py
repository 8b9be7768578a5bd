"""Exact totals for the deposits list and the webhook delivery log, kept by the database (issue 48 item 1).

m0048 kept the payments list's counts in tables of its own; this is the same
design made general (core/infra/kept_counts.py): ``counted_lists`` names each
kept list (its source table and up to three counted columns), ``kept_counts``
holds a merchant's count per list and key values, ``kept_count_deltas`` the
+1/-1 rows the triggers append until the ``payments.fold_counts`` job folds
them. This migration counts ``deposits`` (by coin and status, the list's
cheap filters) and ``webhook_deliveries`` (per merchant: its log has no
filter); m0057 moves the payments' counts here.
"""

from ..core.infra.kept_counts import KeptList


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE counted_lists (
            list TEXT PRIMARY KEY,
            source TEXT NOT NULL,
            keys TEXT NOT NULL
        )""",
        """CREATE TABLE kept_counts (
            list TEXT NOT NULL,
            merchant_id TEXT NOT NULL,
            k1 TEXT NOT NULL,
            k2 TEXT NOT NULL,
            k3 TEXT NOT NULL,
            n {bigint} NOT NULL,
            PRIMARY KEY (list, merchant_id, k1, k2, k3)
        )""",
        """CREATE TABLE kept_count_deltas (
            id {id_pk},
            list TEXT NOT NULL,
            merchant_id TEXT NOT NULL,
            k1 TEXT NOT NULL,
            k2 TEXT NOT NULL,
            k3 TEXT NOT NULL,
            delta INTEGER NOT NULL
        )""",
        "CREATE INDEX kept_count_deltas_merchant ON kept_count_deltas (list, merchant_id)",
        *KeptList("deposits", ("coin", "status")).counted("deposits", dialect),
        *KeptList("webhook_log").counted("webhook_deliveries", dialect),
    ]
