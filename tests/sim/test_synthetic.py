"""Traffic of our own making (synthetic.py): each family's shape, seeded, and bad knobs named."""

from __future__ import annotations

import numpy as np
import pytest

from forescale_sim.errors import SimError
from forescale_sim.synthetic import (FAMILIES, PERIODIC_BURST_SECONDS, PERIODIC_RANGE, STEP_EDGE_SECONDS, Shape,
                                    arrivals, rate_profile)


@pytest.mark.parametrize("family, mean, peak, check", [
    # idle minutes and bursts near the peak
    ("bursty", 2.5, 40.0, lambda r: (r == 0).mean() > 0.1 and r.max() >= 0.6 * 40.0),
    # a climb from a quarter of the mean to the peak, then a plateau
    ("ramp", 4.0, 40.0, lambda r: r[0] == pytest.approx(1.0) and r[-1] == pytest.approx(40.0)),
    # a slow cycle between about the mean and the peak
    ("drift", 20.0, 60.0, lambda r: r[:600].mean() < 30.0 and r[1500:2100].mean() > 45.0),
    # a steady base with spikes of 3-5x
    ("spikes", 10.0, 40.0, lambda r: np.median(r) == 10.0 and 30.0 <= r.max() <= 50.0),
    # a steady mean, a minute's climb to the peak, a quarter of the trace there, a minute back
    ("step", 5.0, 20.0, lambda r: r[0] == r[-1] == 5.0 and (r == 20.0).sum() == 900 - STEP_EDGE_SECONDS + 1
     and np.count_nonzero((r > 5.0) & (r < 20.0)) == 2 * (STEP_EDGE_SECONDS - 1)),
    # a steady mean and a 30 s burst at the peak every period
    ("periodic", 2.0, 20.0, lambda r: set(np.unique(r)) == {2.0, 20.0}
     and 3600 // PERIODIC_RANGE[1] <= np.count_nonzero(np.diff(r) > 0) <= 3600 // PERIODIC_RANGE[0] + 1),
])
def test_each_family_has_its_shape(family, mean, peak, check):
    rate = rate_profile(Shape(family, mean=mean, peak=peak, seed=1))
    assert rate.size == 3600 and (rate >= 0).all()
    assert check(rate)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_the_step_climbs_in_the_second_third(seed):
    rate = rate_profile(Shape("step", mean=5.0, peak=20.0, seed=seed))
    first = int(np.argmax(rate > 5.0))
    assert 1200 <= first <= 2400 - STEP_EDGE_SECONDS


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_the_periodic_bursts_come_at_one_period(seed):
    rate = rate_profile(Shape("periodic", mean=2.0, peak=20.0, seed=seed))
    starts = np.flatnonzero(np.diff(rate) > 0) + 1
    gaps = np.diff(starts)
    assert len(set(gaps)) == 1 and PERIODIC_RANGE[0] <= gaps[0] < PERIODIC_RANGE[1]
    assert all((rate[s:s + PERIODIC_BURST_SECONDS] == 20.0).all() for s in starts[:-1])


@pytest.mark.parametrize("family", FAMILIES)
def test_a_seed_gives_the_same_trace_and_another_seed_another(family):
    a, b = arrivals(Shape(family, seed=3)), arrivals(Shape(family, seed=3))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, arrivals(Shape(family, seed=4)))


@pytest.mark.parametrize("shape, words", [
    (Shape("sawtooth"), "unknown synthetic family 'sawtooth'; choose from bursty, ramp, drift, spikes, step, periodic"),
    (Shape("step", seconds=60), "need seconds >= 120"),
    (Shape("step", mean=30.0, peak=20.0), "0 < mean <= peak"),
    (Shape("bursty", mean=0.0), "0 < mean <= peak"),
])
def test_bad_knobs_are_named(shape, words):
    with pytest.raises(SimError, match=words.replace("(", r"\(")):
        rate_profile(shape)
