"""The fee policy of a bitcoin-family coin: the estimate, the node's floor, the operator's ceiling.

The rate is the estimator's (``estimatesmartfee fee_target_blocks`` by
default), else ``fee_fallback_sat_per_vbyte``, never below the node's
mempool minimum. A payout is signed only at a rate up to
``fee_ceiling_sat_per_vbyte``; above it, ``sign_payout`` raises
``FeeAboveCeiling`` and the payout waits queued. The same ceiling caps a
CPFP bump (``bumping.py``): one ceiling per coin.

The estimator is a seam (``adapter.fee_estimator``, any async callable
answering sat per 1,000 vB or None) because regtest's ``estimatesmartfee``
has no data, and an operator may trust another source than their node.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Awaitable, Callable

from ...api import FeeAboveCeiling
from .rpc import NodeRpc, RpcError, fee_rate_sat_per_kvb

log = logging.getLogger(__name__)

FeeEstimator = Callable[[], Awaitable["int | None"]]  # sat per 1,000 vB, None when unknown
UNIT = "sat/vB"


class NodeFeeEstimator:
    """``estimatesmartfee <target>`` of the node; None when the node has no estimate (regtest, a fresh node)."""

    def __init__(self, rpc: NodeRpc, target_blocks: int, name: str) -> None:
        self.rpc, self.target_blocks, self.name = rpc, target_blocks, name

    async def __call__(self) -> int | None:
        try:
            estimate = await self.rpc.call("estimatesmartfee", self.target_blocks)
        except RpcError as exc:
            log.info("%s: estimatesmartfee failed (%s); using the fallback fee rate", self.name, exc.message)
            return None
        if isinstance(estimate, dict) and estimate.get("feerate") is not None and estimate["feerate"] > 0:
            return fee_rate_sat_per_kvb(estimate["feerate"])
        return None


def per_vbyte(rate_sat_per_kvb: int) -> str:
    """A rate as the operator writes it: sat/vB, exact ("12.5", never a float)."""
    text = format(Decimal(rate_sat_per_kvb) / 1000, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def check_ceiling(rate_sat_per_kvb: int, ceiling_sat_per_vbyte: int) -> None:
    """Refuse to sign above the ceiling: raises ``FeeAboveCeiling`` (the payout waits)."""
    if rate_sat_per_kvb > ceiling_sat_per_vbyte * 1000:
        raise FeeAboveCeiling(per_vbyte(rate_sat_per_kvb), str(ceiling_sat_per_vbyte), UNIT)
