"""Windows, episodes and time to recover, as DESIGN.md §6 defines them."""

from __future__ import annotations

import numpy as np
import pytest

from forescale_sim.metrics import episodes, recovery_seconds, summarize, windows_over

O, U = True, False


@pytest.mark.parametrize("requests,over,expected", [
    ([100, 100, 100, 0], [1, 2, 0, 0], [U, O, U, U]),  # 1% is not over a p99; 2% is; empty is under
    ([10, 50], [1, 0], [O, U]),  # a small window: one request over makes its p99 over
])
def test_windows_over_p99(requests, over, expected) -> None:
    assert windows_over(np.array(requests), np.array(over), 0.99).tolist() == expected


@pytest.mark.parametrize("flags,expected", [
    ([U, O, O, U, O], [(1, 3), (4, 5)]),
    ([O, O], [(0, 2)]),
    ([U, U], []),
])
def test_episodes(flags, expected) -> None:
    assert episodes(np.array(flags)) == expected


# 10 s windows; recovery needs 6 windows (60 s) under
RECOVERY = [
    # one window over, then calm: recovers at the next window: 10 s
    ([O] + [U] * 8, [(10.0, False)]),
    # two over, then calm: 20 s
    ([U, O, O] + [U] * 7, [(20.0, False)]),
    # over, 3 under, over again, then calm: the first episode waits for the first clean 60 s (50 s);
    # the second is 10 s
    ([O, U, U, U, O] + [U] * 7, [(50.0, False), (10.0, False)]),
    # never calm for 60 s before the end: censored at the end of the trace
    ([O, U, U, O, U, U, O], [(70.0, True), (40.0, True), (10.0, True)]),
    # a tail shorter than 60 s with nothing over counts as recovered
    ([U, O, U, U], [(10.0, False)]),
]


@pytest.mark.parametrize("flags,expected", RECOVERY)
def test_recovery_seconds(flags, expected) -> None:
    assert recovery_seconds(np.array(flags)) == expected


def test_summarize_counts_rejected_as_over() -> None:
    requests = np.array([100, 100, 100, 100, 100, 100, 100, 100])
    over = np.array([0, 50, 50, 0, 0, 0, 0, 0])  # e.g. 50 rejected in windows 1 and 2
    s = summarize(requests, over, 0.99)
    assert (s.requests, s.requests_over_slo, s.violation_seconds, s.episodes, s.mttr_seconds) == (800, 100, 20.0, 1, 20.0)
    assert s.over_fraction == pytest.approx(0.125)
    assert s.censored_episodes == 0
