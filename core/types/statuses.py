"""A payment's statuses (SPEC 2.2).

Why on the ground floor: payouts, refunds and the deposit engine read a payment's status, and they must not
import the payments room for a string.
"""

from __future__ import annotations

WAITING, PAYING, PAID, EXPIRED, CANCELLED = "Waiting", "Paying", "Paid", "Expired", "Cancelled"
STATUSES = (WAITING, PAYING, PAID, EXPIRED, CANCELLED)
OPEN_STATUSES = (WAITING, PAYING)
