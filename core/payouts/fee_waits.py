"""Payouts waiting for the network fee to fall below the operator's ceiling.

A sender raises ``FeeAboveCeiling`` instead of signing; the worker keeps the
payout queued with ``last_error`` "waiting: fee ... above the ceiling ..."
(no attempt counted, so no timeout) and looks again every
``FEE_RECHECK_SECONDS``. That wording on the row is the one fact the metric
(``orbchain_payouts_waiting_for_fees``) and the dashboard read, so the three
never disagree. Imports nothing of the room, so ``service`` can use it.
"""

from __future__ import annotations

WAITING = "waiting: "  # last_error prefix of a queued payout waiting (other waits may share it)
FEE_WAITING = f"{WAITING}fee "  # ... for fees: FeeAboveCeiling's message starts "fee "
FEE_RECHECK_SECONDS = 60  # a waiting payout asks for the fee again this often


def waiting_error(reason: str) -> str:
    """The ``last_error`` of a payout waiting for fees: ``reason`` is the sender's ``FeeAboveCeiling`` message."""
    return f"{WAITING}{reason}"


def fee_wait_reason(last_error: str | None) -> str | None:
    """Why a queued payout waits for fees ("fee 200 sat/vB above the ceiling 50"), or None."""
    if last_error and last_error.startswith(FEE_WAITING):
        return last_error[len(WAITING):]
    return None
