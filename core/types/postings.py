"""One line of a ledger transaction.

Why on the ground floor: ``filter_credit_postings`` receives and returns postings, and the plugin contract
stands below the ledger room.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Posting:
    """One line of a ledger transaction: ``amount`` base units into ``account`` (negative: out of it)."""

    account: str
    coin: str
    amount: int
