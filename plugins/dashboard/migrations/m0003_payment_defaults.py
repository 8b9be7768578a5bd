"""``dashboard_payment_defaults``: what the new-payment form preselects for an account (issue 49 item 8).

One row per account that chose a default currency on the settings page (a
coin symbol or a fiat code); an account without one gets its first accepted
coin, the API's own default. The dashboard's table, never a core one.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE dashboard_payment_defaults (
            merchant_id TEXT PRIMARY KEY,
            currency TEXT NOT NULL,
            updated_at {ts} NOT NULL
        )""",
    ]
