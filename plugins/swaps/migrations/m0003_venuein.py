"""XMR swap-in through a deposit venue (plugins/swaps/venuein.py): the order opened when the payment is created.

``payout_address`` is the merchant's fresh settlement-coin address the
venue pays out to (the scanner's deposit there is attributed to the
payment by ``deposit_payment``); ``settled_amount`` is what the merchant
was credited from that payout (the payout less the core's platform fee);
``refund_address`` is the payer's own address for a refund of the source
coin (the ``refund_address`` field of the create body), asked for when the
venue fails the exchange. All null on the other kinds.
"""


def up(dialect: str) -> list[str]:
    return ["ALTER TABLE swaps ADD COLUMN payout_address TEXT",
            "ALTER TABLE swaps ADD COLUMN settled_amount {amount}",
            "ALTER TABLE swaps ADD COLUMN refund_address TEXT",
            "CREATE INDEX swaps_payout_address ON swaps (payout_address)"]
