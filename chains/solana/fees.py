"""The priority fee of a Solana transfer: a percentile of recent fees, under the operator's ceiling.

A leader orders what it packs by the fee paid per compute unit, so a
transfer paying nothing above the signature fee waits behind everything
that does when blocks are full. ``getRecentPrioritizationFees`` with the
accounts the transfer writes (the sender and the recipient) answers, for
each of the last slots the node keeps (up to 150), the least unit price a
landed transaction paid to write them (the block's least when none did);
the transfer pays the ``priority_fee_percentile``-th of those (nearest
rank; 0 when the node knows no slot). Above
``fee_ceiling_micro_lamports_per_cu`` nothing is signed: ``FeeAboveCeiling``,
the payout waits queued (a sweep waits for its next run), as the other
chains' fee ceilings do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ...api import ChainUnavailable, FeeAboveCeiling
from .rpc import SolanaRpc, lamports

UNIT = "micro-lamports/CU"


@dataclass(frozen=True)
class PriorityFeePolicy:
    percentile: int  # 1-100 of the recent slots' fees
    ceiling: int  # micro-lamports per compute unit


def nearest_rank(values: Sequence[int], percentile: int) -> int:
    """The ``percentile``-th of ``values`` by nearest rank (the smallest value at least that share is at or below)."""
    ordered = sorted(values)
    rank = -(-percentile * len(ordered) // 100)  # ceil(p/100 x n), 1-based
    return ordered[max(rank, 1) - 1]


def recent_fees(answer: Any) -> list[int]:
    """The per-slot unit prices of a ``getRecentPrioritizationFees`` answer; refuses any other shape."""
    if not isinstance(answer, list) or not all(isinstance(e, dict) and "prioritizationFee" in e for e in answer):
        raise ChainUnavailable("getRecentPrioritizationFees: not a list of {slot, prioritizationFee}")
    return [lamports(entry["prioritizationFee"]) for entry in answer]


async def unit_price(rpc: SolanaRpc, written: Sequence[str], policy: PriorityFeePolicy) -> int:
    """The unit price (micro-lamports) a transfer writing ``written`` pays now, or ``FeeAboveCeiling``."""
    fees = recent_fees(await rpc.call("getRecentPrioritizationFees", list(written)))
    price = nearest_rank(fees, policy.percentile) if fees else 0
    if price > policy.ceiling:
        raise FeeAboveCeiling(str(price), str(policy.ceiling), UNIT)
    return price
