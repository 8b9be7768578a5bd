"""A plan wears a brand (issue 49 item 3): its customer pages and every invoice it bills are tagged with it.

Nullable: a plan without one (every plan made before) keeps the account's
default brand, as an untagged payment does.
"""


def up(dialect: str) -> list[str]:
    return ["ALTER TABLE subscription_plans ADD COLUMN brand_id TEXT"]
