"""Payments remember the extra fields of a plugin-supplied receive target.

A plugin answering ``payment_receive_target`` (a node's invoice, a venue's
deposit address) may return public fields beyond the address, e.g. a
``lightning`` block; they are stored as JSON with the payment and merged into
its view, so every read shows what the payer was given. NULL for payments at
a derived address.
"""


def up(dialect: str) -> list[str]:
    return ["ALTER TABLE payments ADD COLUMN receive_extra {json}"]
