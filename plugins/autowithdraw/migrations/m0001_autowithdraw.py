"""Auto-withdraw rules (SPEC 2.16, 4.8) and their firing state, in the plugin's own tables.

One rule per (merchant, coin): the cooldown is per (merchant, coin), so two
rules of one coin could never both fire. ``autowithdraw_state`` outlives a
PUT that replaces the rules, so replacing them does not reset the cooldown.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE autowithdraw_rules (
            merchant_id TEXT NOT NULL,
            coin TEXT NOT NULL,
            threshold {amount} NOT NULL,
            destination TEXT NOT NULL,
            position INTEGER NOT NULL,
            PRIMARY KEY (merchant_id, coin)
        )""",
        """CREATE TABLE autowithdraw_state (
            merchant_id TEXT NOT NULL,
            coin TEXT NOT NULL,
            last_fired_at {ts},
            last_error TEXT,
            last_payout_id TEXT,
            PRIMARY KEY (merchant_id, coin)
        )""",
    ]
