"""Indexes for years of history (issue 48 item 1; tests/test_query_plans.py checks every hot query's plan).

* ``payments_merchant_list`` (merchant, created_at, track_id): the payments list's exact order, so a page is
  read straight off the index (no sort of the merchant's whole set) and its ``total`` is an index-only count.
  It replaces ``payments_merchant_created``, its prefix.
* ``payments_merchant_status`` (merchant, status, created_at, track_id): the list filtered by status, its page
  and its count.
* ``payments_merchant_order`` (merchant, order_id): ``?order_id=`` was a scan of the merchant's payments
  (280 ms at a million); partial, as most payments have none.
* ``deposits_merchant_list`` (merchant, created_at, id): ``GET /v1/deposits``'s order, replacing
  ``deposits_merchant_created`` (a deep page read and sorted the merchant's whole set).
* ``webhook_deliveries_created``, ``webhook_events_created``: the retention job (core/events/retention.py)
  finds what is past its retention oldest first, a batch at a time, without scanning the log.
"""


def up(dialect: str) -> list[str]:
    return [
        "CREATE INDEX payments_merchant_list ON payments (merchant_id, created_at, track_id)",
        "DROP INDEX payments_merchant_created",
        "CREATE INDEX payments_merchant_status ON payments (merchant_id, status, created_at, track_id)",
        "CREATE INDEX payments_merchant_order ON payments (merchant_id, order_id) WHERE order_id IS NOT NULL",
        "CREATE INDEX deposits_merchant_list ON deposits (merchant_id, created_at, id)",
        "DROP INDEX deposits_merchant_created",
        "CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at)",
        "CREATE INDEX webhook_events_created ON webhook_events (created_at)",
    ]
