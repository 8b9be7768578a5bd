"""The ChangeNOW exchange id of each gateway swap id: what makes ``create_swap`` idempotent.

ChangeNOW's API takes no idempotency key, so the adapter remembers the
exchange it opened for a swap id and answers a repeated call from here.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE changenow_orders (
            swap_id TEXT PRIMARY KEY,
            exchange_id TEXT NOT NULL,
            payin_address TEXT NOT NULL,
            from_amount {amount} NOT NULL,
            to_amount {amount} NOT NULL,
            created_at {ts} NOT NULL
        )""",
    ]
