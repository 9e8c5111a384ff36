"""Forescale: the operator's own decision engine (forescale_operator.engine,
the same `decide` the operator runs) driven by the real predictor.

Every `forecast.stepSeconds` the policy builds the engine's Observations from
the simulated cluster (per pool: replicas, ready pods, request rate, the SLO
quantile of latency of the requests completed in the last step, the share
rejected or failed, the requests waiting for their first token, the
agreement from AGREEMENT below (pool B: its variant's measured one), the runtime precision and the last measured
start-up), asks the forecaster for the next horizon from the rate and
latency history on the same step, and applies the Decision: desired
replicas of both pools, the route weights and pool A's runtime precision.
Playbook actions with no effect on serving in this model (cache warm-up,
debug logging, the snapshot) are recorded as events only.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

import numpy as np

from forescale_operator.engine import EngineParams, EngineState, Observations, PoolObservation, decide, sizing
from forescale_operator.spec import InferenceSpec
from forescale_predictor import History

from .base import Command, View

#: Agreement with fp32 the simulated servers report per precision. An
#: assumption of the simulator: fp16/bf16 agree almost always; int8 typically
#: loses 1-2 points of top-1 agreement, staying over the default minAgreement 0.97.
AGREEMENT: Mapping[str, float] = {"fp32": 1.0, "fp16": 0.999, "bf16": 0.998, "int8": 0.985}

#: The replay's clock starts at this epoch second (the engine and the
#: forecaster see epoch times; only differences matter).
EPOCH0 = 1_700_000_000.0

#: How much history the forecaster is given (it takes the lookback it needs).
HISTORY_STEPS = 240


def replay_spec(slo_ms: float, quantile: float, max_replicas: int, b_max_replicas: int,
                b_cost_weight: float = 1.0, **overrides: Any) -> dict:
    """The InferenceDeployment spec the replay runs Forescale with: the SLO, pool
    A at fp16 and pool B at int8 on the same GPU, a Gateway API route, and every
    other field at its default."""
    template = {"spec": {"containers": [{"name": "server", "image": "forescale/model-server:replay"}]}}
    spec = {
        "slo": {"targetLatencyMs": slo_ms, "quantile": quantile},
        "pools": {
            "a": {"minReplicas": 1, "maxReplicas": max_replicas, "precision": "fp16", "template": template},
            "b": {"minReplicas": 1, "maxReplicas": b_max_replicas, "precision": "int8",
                  "costWeight": b_cost_weight, "template": template},
        },
        "traffic": {"router": "gatewayapi", "parentRefs": [{"name": "replay-gateway"}]},
    }
    spec.update(overrides)
    return spec


class ForescalePolicy:
    """The engine plus a forecaster, on both pools."""

    name = "forescale"

    def __init__(self, spec: InferenceSpec, forecaster, params: EngineParams, target_per_pod: float,
                 agreement_b: float | None = None) -> None:
        self.spec = spec
        #: what pool B's servers report: its variant's measured agreement (None: AGREEMENT at its precision)
        self.agreement_b = agreement_b
        self.forecaster = forecaster
        self.params = params
        self.target_per_pod = target_per_pod
        self.interval_seconds = float(spec.forecast.step_seconds)
        self.state = EngineState()
        self.times: list[float] = []
        self.rates: list[float] = []
        self.latencies: list[float] = []
        self.events: list[str] = []
        self.phases: Counter[str] = Counter()
        self.forecast_models: Counter[str] = Counter()
        self.reasons: list[str] = []
        self.degraded_reasons: list[str] = []
        #: (replay second, phase) at every phase change
        self.phase_changes: list[tuple[float, str]] = []
        self.last_decision = None

    def start(self, view: View) -> Command:
        """Warm start, as the engine would have sized the pools on a steady first minute without a
        forecast: A for the observed rate plus one SLO window's Poisson noise (sizing.window_margin)
        at its prior capacity, B for the warm reserve's share of it at B's prior capacity.

        Why not the bare rate: a pool packed to its prior capacity at the first tick is a state the
        engine never asks for, and its first minute was the engine's fault in the report (ServeGen
        m-small at 1x: 854 rps on one pod of 824, 30-80 violation s before the second pod was ready).
        """
        rate = view.rate(None, 60.0)
        load = sizing.window_margin(rate, self.params.slo_window_seconds, sizing.OBSERVED_QUANTILE)
        reserve = self.spec.warm_reserve_percent / 100.0
        pods = {}
        for pool, share in (("a", 1.0), ("b", reserve)):
            spec = self.spec.pool(pool)
            capacity = self.params.prior_rps(pool, spec.precision) * self.params.speed(spec.precision)
            pods[pool] = sizing.clamp(sizing.pods_for(share * load, capacity), spec.min_replicas, spec.max_replicas)
        return Command(pods, weights={"a": 100, "b": 0})

    def _pool(self, view: View, pool: str, step: float) -> PoolObservation:
        startups = view.startups(pool)
        precision = view.precision(pool)
        service_ms, service_size = view.service(pool, step)
        return PoolObservation(
            replicas=view.replicas(pool),
            ready_replicas=view.ready(pool),
            rate_rps=view.rate(pool, step),
            latency_ms=view.latency_ms(pool, step),
            error_rate=view.error_rate(pool, step),
            queue_depth=view.queue_depth(pool),
            agreement=self.agreement_b if pool == "b" and self.agreement_b is not None else AGREEMENT.get(precision),
            precision=precision,
            startup_seconds=startups[-1] if startups else None,
            service_ms=service_ms,
            service_size=service_size,
        )

    def observe(self, view: View) -> Observations:
        """The engine's inputs at `view.now`, from the last step of the simulated cluster."""
        step = self.interval_seconds
        return Observations(
            time=EPOCH0 + view.now,
            a=self._pool(view, "a", step),
            b=self._pool(view, "b", step),
            metrics_available=True,
            latency_ms=view.latency_ms(None, step),
            rate_rps=view.rate(None, step),
            over_slo_fraction=view.over_slo_fraction(None, step),
        )

    def decide(self, view: View) -> Command:
        now = EPOCH0 + view.now
        obs = self.observe(view)
        self.times.append(now)
        self.rates.append(obs.rate_rps if obs.rate_rps is not None else np.nan)
        self.latencies.append(obs.latency_ms if obs.latency_ms is not None else np.nan)
        forecast = None
        if len(self.times) >= 2:
            k = slice(-HISTORY_STEPS, None)
            history = History(
                step_seconds=self.interval_seconds,
                times=np.asarray(self.times[k]),
                features={"rate": np.asarray(self.rates[k]), "latency_ms": np.asarray(self.latencies[k])},
            )
            forecast = self.forecaster.forecast(history)
            self.forecast_models[forecast.model] += 1
        decision = decide(self.spec, self.state, obs, forecast, now, self.params)
        self.state = decision.state
        self.last_decision = decision
        self.phases[decision.phase.value] += int(self.interval_seconds)
        if not self.phase_changes or self.phase_changes[-1][1] != decision.phase.value:
            self.phase_changes.append((view.now, decision.phase.value))
        self.events += [e.reason.value for e in decision.events]
        for reason in decision.reasons:
            if reason not in self.reasons[-20:]:
                self.reasons.append(reason)
            if decision.phase.value == "Degraded" and len(self.degraded_reasons) < 3 and reason not in self.degraded_reasons:
                self.degraded_reasons.append(reason)
        return Command(
            replicas=dict(decision.desired_replicas),
            weights=dict(decision.weights),
            precision={"a": decision.runtime_precision["a"]},
        )

    def extras(self) -> dict:
        """What the report adds for this policy: phases, event counts, forecast models used."""
        return {
            "phase_seconds": dict(self.phases),
            "events": dict(Counter(self.events)),
            "forecast_models": dict(self.forecast_models),
            "degraded": self.phases.get("Degraded", 0) > 0,
            "phase_changes": [[t, phase] for t, phase in self.phase_changes],
            "reasons": self.reasons[-5:],
            "degraded_reasons": self.degraded_reasons,
            "capacity_rps": ({k: round(v, 3) for k, v in self.last_decision.capacity_rps.items()}
                             if self.last_decision is not None else {}),
        }
