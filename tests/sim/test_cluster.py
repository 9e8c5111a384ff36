"""Pools: start-up, scale-down order, crashes and GPU-time accounting."""

from __future__ import annotations

import pytest

from forescale_profiles.service_time import A100_OPT13B
from forescale_sim.cluster import Pool, slowdown_at
from forescale_sim.incidents import Incident
from forescale_sim.llm_pod import LlmPod


def make_pool(cost: float = 1.0) -> Pool:
    return Pool("a", "fp16", cost, startup_seconds=90.0, make_server=lambda: LlmPod(A100_OPT13B))


def test_pods_become_ready_after_startup_and_cost_from_scheduling() -> None:
    pool = make_pool(cost=0.5)
    pool.scale_to(2, 100.0)
    assert pool.replicas() == 2 and pool.ready_pods(189.0) == []
    assert len(pool.ready_pods(190.0)) == 2
    pool.note_ready(190.0, 1.0)
    assert pool.startups_seen == [90.0, 90.0]
    pool.close(400.0)
    assert pool.gpu_seconds == pytest.approx(2 * 300.0 * 0.5)  # from scheduling (100) to the end (400)


def test_scale_down_removes_starting_pods_first() -> None:
    pool = make_pool()
    pool.scale_to(2, 0.0)
    pool.scale_to(4, 100.0)  # two more, still starting at 120
    pool.scale_to(2, 120.0)
    assert [p.scheduled_at for p in pool.pods] == [0.0, 0.0]
    assert pool.gpu_seconds == pytest.approx(2 * 20.0)


def test_crash_fails_in_flight_requests_and_reschedules() -> None:
    pool = make_pool()
    pool.scale_to(1, 0.0)
    pod = pool.ready_pods(100.0)[0]
    pod.server.serve(3, 100.0, 500, 400, "fp16", 1.0)
    failed = pool.crash(1, 100.5)
    assert failed == [3]
    assert pool.replicas() == 1 and pool.ready_pods(101.0) == []
    assert len(pool.ready_pods(190.5)) == 1


@pytest.mark.parametrize("now,expected", [(99.0, 1.0), (100.0, 2.5), (399.0, 2.5), (400.0, 1.0)])
def test_slowdown_window(now, expected) -> None:
    incidents = [Incident("slowdown", "a", 100.0, factor=2.5, seconds=300.0)]
    assert slowdown_at(incidents, "a", now) == expected
    assert slowdown_at(incidents, "b", now) == 1.0
