"""A payment link wears a brand (issue 49 item 3): its invoices are tagged with it as a key's are.

Nullable: an untagged link (every link made before) keeps the account's
default brand, as an untagged payment does.
"""


def up(dialect: str) -> list[str]:
    return ["ALTER TABLE payment_links ADD COLUMN brand_id TEXT"]
