"""The GPU-hour floor of any policy that keeps the warm reserve."""

from __future__ import annotations

import numpy as np
import pytest

from forescale_sim.bounds import reserve_floor_gpu_hours


@pytest.mark.parametrize(
    "counts, capacity, want",
    [
        # one hour at 5 rps, 2 rps per pod: A 3 pods + B 1 pod for an hour
        pytest.param([5.0] * 3600, 2.0, 4.0, id="steady"),
        # exactly at capacity: 2 pods, not 3
        pytest.param([4.0] * 3600, 2.0, 3.0, id="at-capacity-rounds-down"),
        # idle: A's minimum and B's minimum still run
        pytest.param([0.0] * 3600, 2.0, 2.0, id="idle-keeps-the-minimums"),
        # half an hour at 9 rps (5 A pods) then half at 1 rps (1 A pod), B 1 throughout
        pytest.param([9.0] * 1800 + [1.0] * 1800, 2.0, (6 * 1800 + 2 * 1800) / 3600, id="two-levels"),
        # a 15 s replay: a full 10 s window and a short 5 s one
        pytest.param([2.0] * 15, 2.0, 2 * 15 / 3600, id="short-last-window"),
    ],
)
def test_reserve_floor(counts, capacity, want):
    assert reserve_floor_gpu_hours(np.array(counts), capacity) == pytest.approx(want)


def test_b_cost_weight_prices_the_reserve():
    assert reserve_floor_gpu_hours(np.full(3600, 5.0), 2.0, b_cost_weight=0.5) == pytest.approx(3.5)


@pytest.mark.parametrize("capacity", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_capacity_is_named(capacity):
    with pytest.raises(ValueError, match="capacity_rps: must be a positive number"):
        reserve_floor_gpu_hours(np.ones(10), capacity)


def test_bad_window_is_named():
    with pytest.raises(ValueError, match="window_seconds: must be >= 1"):
        reserve_floor_gpu_hours(np.ones(10), 2.0, window_seconds=0)
