"""Properties over random tick sequences: bounds, weights, Preview inertness, determinism, restart."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from forescale_operator.engine import EngineState, Observations, PoolObservation, decide

from engine_inputs import PARAMS, build_forecast, build_spec

maybe = lambda s: st.one_of(st.none(), s)  # noqa: E731

pool_obs = st.fixed_dictionaries({
    "replicas": st.integers(0, 30),
    "ready_frac": st.floats(0, 1),
    "rate": maybe(st.floats(0, 3000)),
    "latency": maybe(st.floats(5, 3000)),
    "error_rate": maybe(st.floats(0, 0.3)),
    "queue": maybe(st.floats(0, 50)),
    "agreement": maybe(st.floats(0.9, 1.0)),
    "precision": st.sampled_from([None, "fp16", "int8"]),
    "startup": maybe(st.floats(0, 400)),
})
ticks = st.lists(
    st.fixed_dictionaries({
        "dt": st.floats(1, 120),
        "a": pool_obs,
        "b": pool_obs,
        "available": st.booleans(),
        "latency": maybe(st.floats(5, 3000)),
        "rate": maybe(st.floats(0, 3000)),
        "forecast_rate": maybe(st.floats(0, 5000)),
        "forecast_latency": st.floats(5, 3000),
    }),
    min_size=1,
    max_size=25,
)
specs = st.fixed_dictionaries({
    "mode": st.sampled_from(["Auto", "Preview"]),
    "a_min": st.integers(1, 4), "a_span": st.integers(0, 12),
    "b_min": st.integers(0, 3), "b_span": st.integers(0, 6),
    "warm": st.integers(0, 100), "emergency": st.integers(0, 100),
})


def _pool(raw: dict) -> PoolObservation:
    return PoolObservation(
        replicas=raw["replicas"], ready_replicas=int(raw["replicas"] * raw["ready_frac"]),
        rate_rps=raw["rate"], latency_ms=raw["latency"], error_rate=raw["error_rate"], queue_depth=raw["queue"],
        agreement=raw["agreement"], precision=raw["precision"], startup_seconds=raw["startup"],
    )


@seed(20261202)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec_raw=specs, sequence=ticks)
def test_every_decision_stays_in_bounds_and_weights_sum_to_100(spec_raw, sequence):
    spec = build_spec(
        mode=spec_raw["mode"], warmReservePercent=spec_raw["warm"],
        traffic={"emergencyWeightPercent": spec_raw["emergency"]},
        pools={"a": {"minReplicas": spec_raw["a_min"], "maxReplicas": spec_raw["a_min"] + spec_raw["a_span"]},
               "b": {"minReplicas": spec_raw["b_min"], "maxReplicas": max(1, spec_raw["b_min"] + spec_raw["b_span"])}},
    )
    state, now = EngineState(), 1_000.0
    for raw in sequence:
        now += raw["dt"]
        obs = Observations(now, _pool(raw["a"]), _pool(raw["b"]), raw["available"], raw["latency"], raw["rate"])
        forecast = None if raw["forecast_rate"] is None else build_forecast(now, raw["forecast_rate"], raw["forecast_latency"])
        d = decide(spec, state, obs, forecast, now, PARAMS)
        for pool in (spec.a, spec.b):
            assert pool.min_replicas <= d.desired_replicas[pool.name] <= pool.max_replicas
        assert d.weights["a"] + d.weights["b"] == 100 and 0 <= d.weights["b"] <= 100
        if d.weights["b"] > spec.traffic.emergency_weight_percent:
            # Past the emergency split only an overload shift: A's ready pods cannot carry the rest.
            assert d.state.incident.overload and d.state.incident.stage is None
        if spec.preview:
            assert d.actions == () and d.weights == {"a": 100, "b": 0}
            assert d.desired_replicas == {"a": spec.a.min_replicas, "b": spec.b.min_replicas}
            assert all(e.message.startswith("Preview: would ") for e in d.events)
        # Deterministic, and a restart from status decides exactly the same.
        restored = EngineState.from_status(json.loads(json.dumps(state.to_status())))
        assert decide(spec, restored, obs, forecast, now, PARAMS).to_dict() == d.to_dict()
        state = d.state
