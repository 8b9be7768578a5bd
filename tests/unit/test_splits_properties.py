"""Property tests of the split arithmetic (plugins/splits/arithmetic.py): integers, nothing lost or made."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbchain.plugins.splits.arithmetic import MAX_SPLITS, TOTAL_BPS, distribute


@st.composite
def basis_points(draw):
    """1 to 10 positive integers summing to exactly 10000 (cut points on 1..9999)."""
    count = draw(st.integers(1, MAX_SPLITS))
    cuts = sorted(draw(st.lists(st.integers(1, TOTAL_BPS - 1), min_size=count - 1, max_size=count - 1,
                                unique=True)))
    edges = [0, *cuts, TOTAL_BPS]
    return [b - a for a, b in zip(edges, edges[1:])]


NETS = st.one_of(st.integers(0, 10**9), st.integers(0, 10**30))  # satoshi to 18-decimal wei sizes


@given(NETS, basis_points())
def test_shares_sum_to_the_net_exactly(net, bps):
    shares = distribute(net, bps)
    assert len(shares) == len(bps) and sum(shares) == net
    assert all(isinstance(s, int) and s >= 0 for s in shares)


@given(NETS, basis_points())
def test_every_share_but_the_last_is_its_floor(net, bps):
    shares = distribute(net, bps)
    for share, b in zip(shares[:-1], bps[:-1]):
        assert share * TOTAL_BPS <= net * b < (share + 1) * TOTAL_BPS


@given(NETS, basis_points())
def test_the_last_share_absorbs_under_one_unit_per_other_share(net, bps):
    shares = distribute(net, bps)
    exact_last = net * bps[-1]  # times TOTAL_BPS
    extra = shares[-1] * TOTAL_BPS - exact_last
    assert extra == 0 or 0 < extra < (len(bps) - 1) * TOTAL_BPS


@given(NETS, basis_points())
def test_the_order_of_entries_only_moves_the_remainder(net, bps):
    forward, backward = distribute(net, bps), distribute(net, bps[::-1])[::-1]
    assert sum(forward) == sum(backward) == net
    assert all(abs(a - b) < len(bps) for a, b in zip(forward, backward))


@pytest.mark.parametrize("bps", [[], [5000, 4999], [10001], [0, 10000], [-1, 10001]])
def test_bad_basis_points_are_refused(bps):
    with pytest.raises(ValueError):
        distribute(100, bps)


def test_a_negative_net_is_refused():
    with pytest.raises(ValueError):
        distribute(-1, [10000])
