"""A merchant's retried enrolment finds the first one (``idempotency_key``, issue 36 review).

``POST /v1/subscription`` and ``POST /dashboard/subscriptions`` take an
optional ``idempotency_key``: the same key from the same merchant answers
the subscription it first created instead of enrolling (and billing) the
customer twice. NULL for enrolments made without one; NULLs never collide
in a unique index on either database.
"""


def up(dialect: str) -> list[str]:
    return [
        "ALTER TABLE subscriptions ADD COLUMN idempotency_key TEXT",
        "CREATE UNIQUE INDEX subscriptions_idempotency ON subscriptions (merchant_id, idempotency_key)",
    ]
