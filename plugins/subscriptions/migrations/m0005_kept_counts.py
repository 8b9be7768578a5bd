"""The subscriptions list's exact total kept by the database, like the core's lists (issue 48 item 1).

``GET /v1/subscriptions`` answered a total with ``COUNT(*)`` over the
merchant's rows. They are counted per merchant and status (``KeptList`` in
``orbchain.api``). The list leaves out page enrolments not paid yet
(``IS_SUBSCRIPTION``); those few (a visitor's pending ones, pruned with their
invoices once expired) are counted through a partial index of their own and
subtracted in the same statement. A customer's own subscriptions
(``customer_ref``) are counted through an index of the merchant's customer.
"""

from ..store import KEPT


def up(dialect: str) -> list[str]:
    return [
        *KEPT.counted("subscriptions", dialect),
        "CREATE INDEX subscriptions_enrolling ON subscriptions (merchant_id, status)"
        " WHERE enrol_ip_hash IS NOT NULL AND current_period_end IS NULL",
        "CREATE INDEX subscriptions_customer ON subscriptions (merchant_id, customer_ref, created_at)",
    ]
