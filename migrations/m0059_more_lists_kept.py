"""The payouts and transfers lists' exact totals kept by the database, like the payments' (issue 48 item 1).

``GET /dashboard/payouts`` and ``GET /dashboard/transfers`` answered a total
with ``COUNT(*)`` over the merchant's whole set. A transfer is listed for two
merchants (its sender always; its recipient unless it is held), so
``counted_lists`` learns which column of the source names the merchant
(``merchant``, ``merchant_id`` for every earlier list), and ``transfers`` is
counted twice: ``transfers_sent`` by ``from_merchant_id``,
``transfers_received`` by ``to_merchant_id`` and ``status`` (NULL, kept as
``''``: not held). The list's total is their sum (core/transfers/service.py).
"""

from ..core.infra.kept_counts import KeptList


def up(dialect: str) -> list[str]:
    return [
        "ALTER TABLE counted_lists ADD COLUMN merchant TEXT NOT NULL DEFAULT 'merchant_id'",
        *KeptList("payouts").counted("payouts", dialect),
        *KeptList("transfers_sent").counted("transfers", dialect, merchant="from_merchant_id"),
        *KeptList("transfers_received", ("status",)).counted("transfers", dialect, merchant="to_merchant_id"),
    ]
