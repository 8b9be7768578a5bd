"""The signer's spending policy (issue 45 item 2): what it decided about each payout, and a lock per coin.

``policy_hold`` is why the signing boundary (``core/payouts/signing_policy.py``)
refused a payout (stage ``policy_held``: reserved, Confirming, never claimed);
``authorized_at`` is when it passed, and the caps per hour and per day sum the
payouts authorized in their window (index ``payouts_authorized``);
``policy_released_by`` names the operator who let a held payout go past the
operator's caps and allow-lists (never past the reservation proof).
``signing_locks`` has one row per coin, locked while a payout's check and its
``authorized_at`` are written, so two workers cannot both pass one cap.
"""


def up(dialect: str) -> list[str]:
    return [
        "ALTER TABLE payouts ADD COLUMN policy_hold TEXT",
        "ALTER TABLE payouts ADD COLUMN authorized_at {ts}",
        "ALTER TABLE payouts ADD COLUMN policy_released_by TEXT",
        "CREATE INDEX payouts_authorized ON payouts (coin, authorized_at)",
        "CREATE TABLE signing_locks (coin TEXT PRIMARY KEY)",
    ]
