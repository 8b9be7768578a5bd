"""A merchant's speed policy: per coin, value tiers and the confirmations each needs."""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE speed_tiers (
            merchant_id TEXT NOT NULL,
            coin TEXT NOT NULL,
            up_to {amount} NOT NULL,
            confirmations INTEGER NOT NULL,
            PRIMARY KEY (merchant_id, coin, up_to)
        )""",
    ]
