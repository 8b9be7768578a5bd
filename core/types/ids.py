"""Public ids the core mints: a payment's or payout's ``track_id``.

Why on the ground floor: payments and payouts both mint track ids, and payouts stand beside payments.
"""

from __future__ import annotations

import secrets

import base58


def new_track_id() -> str:
    return base58.b58encode(secrets.token_bytes(16)).decode()[:22]
