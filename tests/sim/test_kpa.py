"""Knative's KPA decider against hand-computed steps from PEERS.md §3."""

from __future__ import annotations

from forescale_sim.policies.kpa import KpaDecider


def test_panic_mode_sequence() -> None:
    kpa = KpaDecider(target=10.0, min_scale=1)
    kpa.start(0.0, 1)
    steps = [
        # (now, stable rps, panic rps, ready pods) -> desired, panicking
        (2.0, 10.0, 10.0, 1, 1, False),  # dspc = dppc = 1
        (4.0, 15.0, 40.0, 1, 4, True),  # dppc 4 >= 2 x 1 ready: panic; max(1, stable 2, panic 4)
        (6.0, 15.0, 10.0, 1, 4, True),  # under threshold but < 60 s since: no scale-down in panic
        (64.0, 15.0, 10.0, 4, 4, True),  # exactly 60 s after: still panicking (strict >)
        (66.0, 10.0, 10.0, 4, 2, False),  # panic over; dspc 1 but at most halving: floor(4/2) = 2
        (68.0, 10.0, 10.0, 2, 1, False),  # floor(2/2) = 1
    ]
    for now, stable, panic, ready, want, panicking in steps:
        assert (kpa.scale(now, stable, panic, ready), kpa.panicking) == (want, panicking), now


def test_starts_in_panic_with_more_than_one_ready_pod() -> None:
    kpa = KpaDecider(target=10.0)
    kpa.start(0.0, 3)
    assert kpa.panicking
    # dspc 1, and no scale-down while panicking: held at the 3 it started with
    assert kpa.scale(2.0, 5.0, 5.0, 3) == 3


def test_max_scale_bounds_and_zero_rate() -> None:
    kpa = KpaDecider(target=10.0, min_scale=1, max_scale=5)
    kpa.start(0.0, 1)
    assert kpa.scale(2.0, 300.0, 300.0, 1) == 5  # 30 wanted, max-scale 5
    kpa2 = KpaDecider(target=10.0, min_scale=1)
    kpa2.start(0.0, 1)
    assert kpa2.scale(2.0, 0.0, 0.0, 1) == 1  # min-scale 1
