"""Static, oracle and the Forescale policy's wiring, with a stub view injected."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from forescale_operator.engine import EngineParams
from forescale_operator.spec import parse_spec
from forescale_predictor import make_baseline
from forescale_sim.policies.forescale import AGREEMENT, EPOCH0, ForescalePolicy, replay_spec
from forescale_sim.policies.oracle import OraclePolicy
from forescale_sim.policies.static import StaticPolicy


@dataclass
class StubView:
    """A fixed cluster: pool -> (replicas, ready, rate, latency, errors, queue, precision, startups)."""

    now: float = 600.0
    total_rps: float = 9.0
    pools: dict = field(default_factory=lambda: {
        "a": (4, 3, 9.0, 450.0, 0.0, 2.0, "fp16", [90.0]),
        "b": (1, 1, 0.0, None, None, 0.0, "int8", []),
    })

    def replicas(self, p): return self.pools[p][0]
    def ready(self, p): return self.pools[p][1]
    def rate(self, p, s): return self.total_rps if p is None else self.pools[p][2]
    def latency_ms(self, p, s): return 450.0 if p is None else self.pools[p][3]
    def error_rate(self, p, s): return self.pools[p][4] if p else 0.0
    def queue_depth(self, p): return self.pools[p][5]
    def over_slo_fraction(self, p, s): return 0.0
    def precision(self, p): return self.pools[p][6]
    def startups(self, p): return self.pools[p][7]
    def service(self, p, s): return (None, None)


@pytest.mark.parametrize("peak,target,expected", [(10.0, 2.0, 5), (10.1, 2.0, 6), (0.5, 2.0, 1)])
def test_static_sizes_for_the_peak(peak, target, expected) -> None:
    assert StaticPolicy(target, peak).replicas == expected


def test_oracle_schedules_one_startup_ahead_and_refines() -> None:
    rates = np.array([1.0, 1.0, 5.0, 5.0, 1.0, 1.0, 1.0])
    oracle = OraclePolicy(1.0, rates, np.full(rates.size, 2.0), startup_seconds=15)
    assert oracle.need.tolist() == [1, 1, 3, 3, 1, 1, 1]
    # at t=5 a window starting within 15 s (window 2 at t=20) is not yet in reach; at t=10 it is
    assert [oracle.replicas_at(t) for t in (0, 5, 10, 30, 40)] == [1, 3, 3, 3, 1]
    assert oracle.refine(np.array([False, False, False, True, False, False, False]))
    assert oracle.need.tolist() == [1, 1, 4, 4, 1, 1, 1]
    assert not oracle.refine(np.zeros(7, dtype=bool))


def test_replay_spec_parses_with_the_design_defaults() -> None:
    spec = parse_spec(replay_spec(1000, 0.99, 20, 10))
    assert (spec.slo.target_latency_ms, spec.a.precision, spec.b.precision) == (1000, "fp16", "int8")
    assert (spec.a.max_replicas, spec.b.max_replicas, spec.b.cost_weight) == (20, 10, 1.0)
    assert spec.warm_reserve_percent == 20 and spec.traffic.emergency_weight_percent == 30


def test_forescale_observes_the_view_and_applies_the_decision() -> None:
    spec = parse_spec(replay_spec(1000, 0.99, 20, 10))
    policy = ForescalePolicy(spec, make_baseline("last", step_seconds=15, horizon_seconds=180),
                             EngineParams(fallback_capacity_rps=2.5), target_per_pod=1.75)
    view = StubView()
    obs = policy.observe(view)
    assert obs.time == EPOCH0 + 600.0
    assert (obs.a.replicas, obs.a.ready_replicas, obs.a.rate_rps, obs.a.latency_ms, obs.a.queue_depth) == (4, 3, 9.0, 450.0, 2.0)
    assert (obs.a.agreement, obs.b.agreement) == (AGREEMENT["fp16"], AGREEMENT["int8"])
    assert (obs.a.startup_seconds, obs.b.startup_seconds) == (90.0, None)
    commands = []
    for t in (600.0, 615.0, 630.0):
        view.now = t
        commands.append(policy.decide(view))
    cmd = commands[-1]
    assert set(cmd.replicas) == {"a", "b"} and sum(cmd.weights.values()) == 100
    # 9 rps at 2.5 rps per pod needs at least 4 pods of A; B keeps its minimum of 1
    assert cmd.replicas["a"] >= 4 and cmd.replicas["b"] >= 1
    assert policy.forecast_models == {"last": 2}  # the first tick has no history to forecast from


@pytest.mark.parametrize("rate, capacity, a, b", [
    # 854 rps on pods of 824: the bare rate packs one pod at 104%; one window's Poisson noise at q0.9
    # (+11.8 rps) asks for two, as the engine would on a steady minute (ServeGen m-small at 1x)
    (854.0, 824.3, 2, 1),
    (9.0, 2.5, 5, 1),       # 10.2 rps with the margin, not the 3.6 pods of the bare rate
    (0.0, 2.5, 1, 1),       # no traffic: each pool's minimum
    (5000.0, 100.0, 51, 7),  # B holds 20% of 5,029 rps at int8 (100 x 5/3 rps per pod)
])
def test_forescale_warm_starts_as_its_engine_sizes_a_steady_minute(rate, capacity, a, b) -> None:
    spec = parse_spec(replay_spec(200, 0.99, 100, 20))
    policy = ForescalePolicy(spec, make_baseline("last", step_seconds=15, horizon_seconds=180),
                             EngineParams(fallback_capacity_rps=capacity), target_per_pod=0.7 * capacity)
    command = policy.start(StubView(total_rps=rate))
    assert command.replicas == {"a": a, "b": b}
    assert command.weights == {"a": 100, "b": 0}
