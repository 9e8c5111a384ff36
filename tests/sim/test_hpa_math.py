"""The HPA's arithmetic against hand-computed tables from PEERS.md §1."""

from __future__ import annotations

import pytest

from forescale_sim.policies.hpa_math import LegacyNormalizer, external_average_value_proposal, pods_metric_proposal, within

POD_METRIC = [
    # (current, ready per-pod values, unready pods, target) -> proposal; comment = the hand computation
    (4, [10] * 4, 0, 10, 4),  # r = 1.0: within
    (4, [10.5] * 4, 0, 10, 4),  # r = 1.05: within the 0.1 tolerance
    (4, [11] * 4, 0, 10, 4),  # r = 1.1: tolerance is inclusive
    (4, [11.5] * 4, 0, 10, 5),  # r = 1.15: ceil(1.15 x 4) = ceil(4.6)
    (4, [5] * 4, 0, 10, 2),  # r = 0.5: ceil(2.0)
    (4, [8.9] * 4, 0, 10, 4),  # r = 0.89: ceil(3.56) = 4
    (5, [20] * 3, 2, 10, 6),  # r = 2 with 2 starting: r2 = 60/(10x5) = 1.2 -> ceil(6.0)
    (5, [15] * 3, 2, 10, 5),  # r2 = 45/50 = 0.9: within -> current
    (6, [16] * 3, 3, 10, 6),  # r = 1.6, r2 = 48/60 = 0.8 crosses 1 -> current
    (4, [5] * 2, 2, 10, 1),  # r = 0.5 <= 1: starting pods ignored, ceil(0.5 x 2)
    (3, [], 3, 10, None),  # no ready pod has a sample: no proposal
]


@pytest.mark.parametrize("current,values,unready,target,expected", POD_METRIC)
def test_pods_metric_proposal(current, values, unready, target, expected) -> None:
    assert pods_metric_proposal(current, values, unready, target) == expected


EXTERNAL = [
    # (value, threshold, status.replicas) -> proposal
    (100, 10, 10, 10),  # v/(t x n) = 1
    (109, 10, 10, 10),  # 1.09: within
    (150, 10, 10, 15),  # ceil(150/10)
    (95, 10, 5, 10),  # 1.9: ceil(9.5)
    (0, 10, 3, 0),  # KEDA never divides by replicas: ceil(0/10)
    (7, 10, 0, 1),  # no replicas in status: ceil(0.7)
]


@pytest.mark.parametrize("value,threshold,replicas,expected", EXTERNAL)
def test_external_average_value(value, threshold, replicas, expected) -> None:
    assert external_average_value_proposal(value, threshold, replicas) == expected


@pytest.mark.parametrize("ratio,inside", [(0.9, True), (1.1, True), (0.8999, False), (1.1001, False)])
def test_tolerance_is_inclusive(ratio, inside) -> None:
    assert within(ratio) is inside


LEGACY = [
    # steps of (now, current, proposal) -> expected replicas; start at t=0 with 3
    ([(15, 3, 1)], [3]),  # the start recommendation (3) holds the scale-down
    ([(15, 3, 1), (299, 3, 1)], [3, 3]),  # still inside 300 s of the start
    ([(15, 3, 1), (301, 3, 1)], [3, 1]),  # the start's recommendation expired
    ([(15, 3, 2), (200, 3, 1), (314, 3, 1), (316, 3, 1)], [3, 3, 2, 1]),  # t=15 (2) is inside the window at 314, out at 316
    ([(15, 3, 20)], [6]),  # scale-up limited to max(2 x 3, 4) = 6
    ([(15, 1, 20)], [4]),  # ... and at least 4
    ([(15, 8, 20)], [10]),  # max 10
]


@pytest.mark.parametrize("steps,expected", LEGACY)
def test_legacy_normalization(steps, expected) -> None:
    norm = LegacyNormalizer(min_replicas=1, max_replicas=10)
    norm.start(0.0, 3)
    assert [norm.normalize(now, cur, prop) for now, cur, prop in steps] == expected
