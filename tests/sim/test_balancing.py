"""Least-request balancing by two random choices (Envoy's default with equal weights)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from forescale_sim.balancing import pick


@dataclass
class FakeServer:
    busy: int

    def outstanding(self, now: float) -> int:
        return self.busy


@pytest.mark.parametrize(
    "busy, u1, u2, expected",
    [
        ([5], 0.7, 0.3, 0),  # one pod takes everything
        ([5, 3], 0.0, 0.0, 1),  # the second draw skips the first pod; the less busy wins
        ([3, 5], 0.0, 0.9, 0),
        ([4, 4, 4], 0.5, 0.5, 1),  # a tie goes to the first drawn (pod 1; the second is pod 2)
        ([9, 0, 9, 9], 0.0, 0.9, 0),  # the idle pod is not drawn, so it gets nothing
        ([9, 0, 9, 9], 0.3, 0.9, 1),  # drawn first: it wins
        ([9, 0, 9, 9], 0.9, 0.0, 3),  # pods 3 and 0 drawn: a tie, the first drawn (3) wins
    ],
)
def test_the_less_busy_of_two_distinct_draws(busy: list[int], u1: float, u2: float, expected: int) -> None:
    servers = [FakeServer(b) for b in busy]
    assert pick(servers, u1, u2, 0.0) is servers[expected]


def test_two_draws_are_never_the_same_pod() -> None:
    servers = [FakeServer(0) for _ in range(5)]
    for u1 in np.linspace(0, 0.999, 50):
        for u2 in np.linspace(0, 0.999, 50):
            first = int(u1 * 5)
            servers[first].busy = 1  # make the first draw lose to anything else
            assert pick(servers, u1, u2, 0.0) is not servers[first]
            servers[first].busy = 0


def test_a_new_pod_gets_about_two_in_n_requests_not_all() -> None:
    """The herd an exact scan would send to a pod that just became ready: with 24
    busy pods and one idle one, the idle one is drawn in about 2/25 of the pairs."""
    servers = [FakeServer(20) for _ in range(24)] + [FakeServer(0)]
    rng = np.random.default_rng(0)
    draws = rng.random((2, 10_000))
    share = np.mean([pick(servers, a, b, 0.0) is servers[-1] for a, b in draws.T])
    assert share == pytest.approx(2 / 25, abs=0.01)
