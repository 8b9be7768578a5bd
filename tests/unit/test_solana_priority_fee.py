"""The Solana priority fee's percentile (nearest rank) and the shapes of the node's answer it accepts."""

from __future__ import annotations

import pytest

from orbchain.chains.solana.fees import nearest_rank, recent_fees
from orbchain.core.types.chains import ChainUnavailable


@pytest.mark.parametrize(("values", "percentile", "expected"), [
    ([7], 1, 7), ([7], 100, 7),
    ([0, 0, 0, 100], 75, 0), ([0, 0, 100, 100], 75, 100),  # the 3rd of 4: ceil(0.75 x 4)
    ([40, 10, 30, 20], 50, 20), ([40, 10, 30, 20], 51, 30), ([40, 10, 30, 20], 100, 40), ([40, 10, 30, 20], 1, 10),
    (list(range(150)), 75, 112),  # ceil(112.5) = 113th of 0..149
])
def test_nearest_rank(values, percentile, expected):
    assert nearest_rank(values, percentile) == expected


def test_the_answer_must_be_slots_with_integer_fees():
    assert recent_fees([{"slot": 5, "prioritizationFee": 12}, {"slot": 6, "prioritizationFee": 0}]) == [12, 0]
    assert recent_fees([]) == []
    for bad in ({"value": []}, [{"slot": 5}], [{"slot": 5, "prioritizationFee": -1}],
                [{"slot": 5, "prioritizationFee": 1.5}], [{"slot": 5, "prioritizationFee": True}]):
        with pytest.raises(ChainUnavailable):
            recent_fees(bad)
