"""A late deposit names the payment it was late for (issue 46 item 4): ``deposits.late_for``.

Set when a deposit arrives (judged at its block's time) after the payment at
its address expired or was cancelled: the money is credited to the merchant
with no payment attached (``track_id`` NULL, so it never changes that
payment's status or totals), and ``late_for`` keeps which payment it was for.
"""


def up(dialect: str) -> list[str]:
    return ["ALTER TABLE deposits ADD COLUMN late_for TEXT"]
