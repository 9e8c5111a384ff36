"""V(g) and G(v) of DESIGN.md §6 "Frontier", on hand-made peer curves."""

from __future__ import annotations

import pytest

from forescale_sim.frontier import PeerPoint, peer_cost_at_violations, peer_violations_at_cost

# (GPU-hours, violation seconds): cheaper points violate more, as a utilisation sweep does
CURVE = [
    PeerPoint("hpa", 0.4, 6.0, 0.0),
    PeerPoint("hpa", 0.7, 4.0, 30.0),
    PeerPoint("kpa", 0.7, 4.0, 20.0),
    PeerPoint("keda", 0.9, 3.0, 100.0),
    PeerPoint("kpa", 0.9, 3.0, 90.0),
]


@pytest.mark.parametrize("gpu_hours, expected", [
    (10.0, 0.0),    # every point affordable: the best of all
    (6.0, 0.0),     # the boundary counts (<= g)
    (5.99, 20.0),   # the 6.0 point is out: the best of the 4.0 points
    (4.0, 20.0),
    (3.5, 90.0),    # only the cheapest points: the better of the two
    (2.0, 90.0),    # nothing that cheap: the cheapest point's (the better on a tie)
])
def test_peer_violations_at_cost(gpu_hours: float, expected: float) -> None:
    assert peer_violations_at_cost(CURVE, gpu_hours) == expected


@pytest.mark.parametrize("violation_seconds, expected", [
    (1000.0, 3.0),  # every point good enough: the cheapest
    (90.0, 3.0),    # the boundary counts (<= v)
    (89.0, 4.0),
    (20.0, 4.0),
    (19.0, 6.0),
    (0.0, 6.0),
])
def test_peer_cost_at_violations(violation_seconds: float, expected: float) -> None:
    assert peer_cost_at_violations(CURVE, violation_seconds) == expected


@pytest.mark.parametrize("points, v, expected", [
    # none has that few: the GPU-hours of the point with the fewest (the cheaper on a tie)
    ([PeerPoint("hpa", 0.4, 6.0, 10.0), PeerPoint("kpa", 0.4, 5.0, 10.0), PeerPoint("kpa", 0.9, 2.0, 50.0)], 0.0, 5.0),
    ([PeerPoint("hpa", 0.7, 2.5, 40.0)], 10.0, 2.5),
])
def test_peer_cost_when_no_point_is_that_good(points: list[PeerPoint], v: float, expected: float) -> None:
    assert peer_cost_at_violations(points, v) == expected


@pytest.mark.parametrize("fn", [peer_violations_at_cost, peer_cost_at_violations])
def test_an_empty_curve_is_refused(fn) -> None:
    with pytest.raises(ValueError, match="no points"):
        fn([], 1.0)
