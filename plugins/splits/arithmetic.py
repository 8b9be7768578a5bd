"""How one credited net amount is cut into split shares: integers only, nothing lost.

Each share but the last is ``floor(net * bps / 10000)``; the last takes
what is left, so the shares always add up to ``net`` exactly and the
rounding (at most one base unit per earlier share) lands on one recipient
the merchant chose by putting it last.
"""

from __future__ import annotations

from typing import Sequence

TOTAL_BPS = 10_000
MAX_SPLITS = 10  # SPEC 8


def distribute(net: int, bps: Sequence[int]) -> list[int]:
    """Shares of ``net`` base units for ``bps`` (which sum to 10000), in order."""
    if not bps or sum(bps) != TOTAL_BPS or any(b <= 0 for b in bps):
        raise ValueError(f"basis points must be positive and sum to {TOTAL_BPS}: {list(bps)!r}")
    if net < 0:
        raise ValueError("the net amount cannot be negative")
    shares = [net * b // TOTAL_BPS for b in bps[:-1]]
    shares.append(net - sum(shares))
    return shares
