"""Payments remember the brand of the scoped key that created them (SPEC 4.9, 5.2).

A key may carry ``brand_id``; every payment made with it is tagged with that
brand, once, at creation. The tag is copied rather than read through the key
later, so a revoked key or a later change never re-brands a payment that a
payer has already seen. The core does not interpret it: plugins answering
``page_branding`` and ``webhook_destination`` do. NULL for untagged payments.
"""


def up(dialect: str) -> list[str]:
    return ["ALTER TABLE payments ADD COLUMN brand_id TEXT"]
