"""XMR swap-in (plugins/swaps/swapin.py): the platform fee of a conversion, charged once in the settlement coin.

``fee_amount`` is the platform fee in source units (the core's fee on the
XMR deposit); the engine charges the same share of what the venue delivers.
Null on balance swaps and auto-settle rows (their fee, if any, was taken
before the conversion).
"""


def up(dialect: str) -> list[str]:
    return ["ALTER TABLE swaps ADD COLUMN fee_amount {amount}",
            "CREATE INDEX swaps_deposit ON swaps (deposit_id)"]
