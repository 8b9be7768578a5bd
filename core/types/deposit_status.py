"""Deposit statuses (SPEC 3.2), shared by the deposit engine and the payment status rules.

PENDING: seen, below its threshold. CONFIRMED: its credit was posted but
waits on a conversion (``decide_credit_status``), so it does not count as
paid yet. CREDITED: the merchant has it. FAILED: it will not confirm: dropped from
chain and mempool past the grace period, or at once when the payer replaced or
double-spent it (``deposits.failure_reason``, ``core/watching/conflicts.py``).
"""

from __future__ import annotations

PENDING, CONFIRMED, CREDITED, FAILED = "PENDING", "CONFIRMED", "CREDITED", "FAILED"
DEPOSIT_STATUSES = (PENDING, CONFIRMED, CREDITED, FAILED)
# Deposits whose money is still on its way to the merchant: a payment waits for them.
IN_PROGRESS = (PENDING, CONFIRMED)
# Deposits whose credit is in the ledger (a reorg must reverse it).
POSTED = (CONFIRMED, CREDITED)
