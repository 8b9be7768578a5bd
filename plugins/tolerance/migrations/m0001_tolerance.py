"""A merchant's underpayment tolerance: a percentage (basis points) and, per coin, an absolute amount."""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE payment_tolerance (
            merchant_id TEXT PRIMARY KEY,
            percent_bp INTEGER NOT NULL,
            updated_at {ts} NOT NULL
        )""",
        """CREATE TABLE payment_tolerance_coins (
            merchant_id TEXT NOT NULL,
            coin TEXT NOT NULL,
            absolute {amount} NOT NULL,
            PRIMARY KEY (merchant_id, coin)
        )""",
    ]
