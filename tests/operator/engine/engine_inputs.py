"""Builders for the engine's inputs: a spec, one tick of observations, a forecast.

conftest.py hands them to tests as fixtures, so that each test states only what it varies; a test
that needs one at import time (a parametrize table) imports it from here. Not from conftest: with
several test folders on one command line, `conftest` names whichever folder's was imported first.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from forescale_operator.engine import EngineParams, Observations, PoolObservation
from forescale_operator.spec import InferenceSpec, parse_spec
from forescale_predictor.forecast_types import Forecast

TEMPLATE = {"spec": {"containers": [{"name": "server", "image": "forescale/server:test"}]}}

BASE_SPEC: dict[str, Any] = {
    "slo": {"targetLatencyMs": 200},
    "pools": {
        "a": {"minReplicas": 2, "maxReplicas": 20, "precision": "fp16", "template": TEMPLATE},
        "b": {"minReplicas": 1, "maxReplicas": 10, "precision": "int8", "template": TEMPLATE},
    },
    "warmReservePercent": 20,
    "forecast": {"horizonSeconds": 180, "stepSeconds": 15},
    "traffic": {"router": "none", "emergencyWeightPercent": 30,
                "cutback": {"stepPercent": 10, "intervalSeconds": 60, "stableSeconds": 120}},
    "emergency": {"triggerRatio": 2.0, "errorRatePercent": 5, "precisionFallback": True,
                  "minAgreement": 0.97, "cacheWarmup": True, "debugLogSeconds": 300},
}

#: 50 rps per pod at fp16 before anything is learned (int8 then gets 83.3, fp32 25),
#: pods sized to 85% of it (42.5 rps at fp16), so that the tables' numbers stay round
PARAMS = EngineParams(name="chat", fallback_capacity_rps=50.0, stabilization_seconds=300.0)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def build_spec(**over: Any) -> InferenceSpec:
    """The base spec with nested overrides, e.g. build_spec(mode="Preview", pools={"b": {"maxReplicas": 2}})."""
    return parse_spec(_merge(BASE_SPEC, over))


def build_obs(
    t: float = 0.0,
    rate: float | None = 100.0,
    latency: float | None = 100.0,
    a: tuple[int, int] = (2, 2),
    b: tuple[int, int] = (1, 1),
    weights: tuple[int, int] = (100, 0),
    available: bool = True,
    a_extra: dict[str, Any] | None = None,
    b_extra: dict[str, Any] | None = None,
) -> Observations:
    """One tick: `a`/`b` are (replicas, ready); the rate is split by `weights`;
    each pool reports the overall latency unless `*_extra` says otherwise."""
    def pool(replicas_ready: tuple[int, int], share: int, extra: dict[str, Any] | None, precision: str) -> PoolObservation:
        fields: dict[str, Any] = dict(
            replicas=replicas_ready[0], ready_replicas=replicas_ready[1],
            rate_rps=None if rate is None else rate * share / 100.0,
            latency_ms=latency if share > 0 else None,
            error_rate=0.0, queue_depth=0.0, agreement=0.99, precision=precision,
        )
        fields.update(extra or {})
        return PoolObservation(**fields)

    return Observations(
        time=t,
        a=pool(a, weights[0], a_extra, "fp16"),
        b=pool(b, weights[1], b_extra, "int8"),
        metrics_available=available,
        latency_ms=latency,
        rate_rps=rate,
    )


def build_forecast(
    now: float,
    rate_upper: float | list[float],
    latency_upper: float | list[float] = 100.0,
    step: float = 15.0,
    horizon: float = 180.0,
    model: str = "lstm",
    median_ratio: float = 0.8,
) -> Forecast:
    """A forecast generated at `now`; scalars fill the horizon, lists give one value per step. The rate's
    median is `median_ratio` of its upper band (how wide the band is)."""
    steps = int(round(horizon / step))

    def series(v: float | list[float]) -> np.ndarray:
        arr = np.full(steps, float(v)) if np.isscalar(v) else np.asarray(v, dtype=float)
        assert len(arr) == steps, f"need {steps} values, got {len(arr)}"
        return arr

    rate, lat = series(rate_upper), series(latency_upper)
    return Forecast(
        generated_at=now, step_seconds=step, horizon_seconds=horizon, quantiles=(0.1, 0.5, 0.9),
        latency_ms={0.1: lat * 0.6, 0.5: lat * 0.8, 0.9: lat},
        rate={0.1: rate * min(0.6, median_ratio), 0.5: rate * median_ratio, 0.9: rate},
        model=model,
    )
