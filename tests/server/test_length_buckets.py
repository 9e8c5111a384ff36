"""Length grouping of a batch (less padding for short inputs)."""

from __future__ import annotations

import pytest

from forescale_server.length_buckets import length_groups


@pytest.mark.parametrize(
    "lengths,overhead,expected",
    [
        ([], 64, []),
        ([10, 10, 10], 64, [[0, 1, 2]]),  # equal lengths: one pass
        ([10, 12, 40, 11, 38, 9], 64, [[5, 0, 3, 1], [4, 2]]),  # short ones apart from the long ones
        ([10, 40], 1000, [[0, 1]]),  # a costly extra pass is not worth it
        ([5, 50, 500], 0, [[0], [1], [2]]),  # free passes: no padding at all
    ],
)
def test_groups(lengths, overhead, expected):
    assert length_groups(lengths, overhead) == expected


@pytest.mark.parametrize("lengths", [[3, 1, 2], [7] * 32, list(range(32, 0, -1))])
def test_every_index_exactly_once(lengths):
    groups = length_groups(lengths)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
