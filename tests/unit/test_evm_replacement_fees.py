"""The fees of a re-signed EVM transaction (``chains/evm/bumping.py``): geth's replacement minimum, the market,
the operator's ceiling."""

from __future__ import annotations

import pytest

from orbchain.api import FeeAboveCeiling
from orbchain.chains.evm.bumping import priced_out, replacement_fees
from orbchain.chains.evm.versions import Version

GWEI = 10**9


def version(max_fee: int, tip: int) -> Version:
    return Version(0, "0x" + "ab" * 32, "0x02", max_fee, tip, 100)


def test_both_fees_rise_by_at_least_ten_percent_plus_one_wei_even_when_the_market_fell():
    fees = replacement_fees(version(20 * GWEI, 2 * GWEI), next_base=1, market_tip=1, ceiling=None)
    assert fees.max_priority_fee_per_gas == 2 * GWEI + 2 * GWEI // 10 + 1
    assert fees.max_fee_per_gas == 20 * GWEI + 2 * GWEI + 1


def test_the_max_fee_follows_the_base_fee_like_a_fresh_signing():
    fees = replacement_fees(version(10 * GWEI, GWEI), next_base=40 * GWEI, market_tip=GWEI, ceiling=None)
    tip = GWEI + GWEI // 10 + 1
    assert fees.max_priority_fee_per_gas == tip
    assert fees.max_fee_per_gas == 2 * 40 * GWEI + tip


def test_the_ceiling_caps_the_max_fee_and_refuses_a_replacement_that_cannot_fit_under_it():
    fees = replacement_fees(version(10 * GWEI, GWEI), next_base=20 * GWEI, market_tip=GWEI, ceiling=30 * GWEI)
    assert fees.max_fee_per_gas == 30 * GWEI
    with pytest.raises(FeeAboveCeiling, match="above the ceiling 30"):
        replacement_fees(version(10 * GWEI, GWEI), next_base=29 * GWEI, market_tip=GWEI, ceiling=30 * GWEI)
    with pytest.raises(FeeAboveCeiling):  # the replacement minimum alone is above it
        replacement_fees(version(28 * GWEI, GWEI), next_base=GWEI, market_tip=GWEI, ceiling=30 * GWEI)


def test_a_transaction_priced_at_the_market_is_not_stuck_on_price():
    assert not priced_out(version(10 * GWEI, GWEI), next_base=9 * GWEI, market_tip=GWEI)
    assert priced_out(version(10 * GWEI, GWEI), next_base=9 * GWEI + 1, market_tip=GWEI)
    assert priced_out(version(10 * GWEI, GWEI), next_base=GWEI, market_tip=2 * GWEI)  # the tip market moved
