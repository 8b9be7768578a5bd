"""Brands (SPEC 2.16, 4.11): the plugin's own table, never a core one.

The slug is unique per account, archived brands included (an archived
brand keeps its slug, so payments and keys that name it stay unambiguous).
The default brand is the row whose slug is ``default``: the unique index
is also what makes a second default impossible, even when two first
requests of one account race to create it.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE brands (
            id TEXT PRIMARY KEY,
            merchant_id TEXT NOT NULL,
            name TEXT NOT NULL,
            slug TEXT NOT NULL,
            logo_url TEXT,
            theme_mode TEXT,
            brand_color TEXT,
            webhook_url TEXT,
            webhook_secret TEXT,
            archived_at {ts},
            created_at {ts} NOT NULL,
            updated_at {ts} NOT NULL
        )""",
        "CREATE UNIQUE INDEX brands_merchant_slug ON brands (merchant_id, slug)",
    ]
