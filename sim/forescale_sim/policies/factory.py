"""Build a policy by name for one replay."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from forescale_profiles.variant_speed import PoolBVariant

from ..calibration import Calibration
from ..cluster import slowdown_at
from ..errors import SimError
from ..incidents import Incident
from .base import Policy

POLICIES = ("forescale", "hpa", "keda", "kpa", "static", "oracle")


@dataclass
class PolicyContext:
    """What every policy may be built from."""

    calibration: Calibration
    window_rates: np.ndarray  # true arrival rate per 10 s window (the oracle's foresight)
    peak_rps: float  # highest 60 s average rate of the trace
    incidents: list[Incident]
    startup_seconds: float
    max_replicas: int
    slo_ms: float
    quantile: float
    #: pool B's model (forescale_sim.pool_b)
    variant_b: PoolBVariant
    forecaster_factory: Callable[[float, float], object] | None = None
    spec_overrides: dict | None = None
    #: `--set` flags (spec_file.parse_sets), applied over the whole replay spec
    spec_sets: tuple = ()


def parse_policies(text: str) -> list[str]:
    """`forescale,hpa,...` -> names, in order; SimError on an unknown one."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in POLICIES]
    if unknown or not names:
        raise SimError(f"unknown policy {', '.join(unknown) or '(none given)'}; choose from {', '.join(POLICIES)}")
    return list(dict.fromkeys(names))


def make_policy(name: str, ctx: PolicyContext) -> Policy:
    """The policy `name`, with its per-pod target from the shared calibration."""
    target = ctx.calibration.target_per_pod("fp16")
    if name == "hpa":
        from .hpa import HpaPolicy
        return HpaPolicy(target, max_replicas=ctx.max_replicas)
    if name == "keda":
        from .keda import KedaPolicy
        return KedaPolicy(target, max_replica_count=ctx.max_replicas)
    if name == "kpa":
        from .kpa import KpaPolicy
        return KpaPolicy(target, max_scale=ctx.max_replicas)
    if name == "static":
        from .static import StaticPolicy
        policy = StaticPolicy(target, ctx.peak_rps)
        policy.replicas = min(policy.replicas, ctx.max_replicas)
        return policy
    if name == "oracle":
        from .oracle import WINDOW_SECONDS, OraclePolicy
        mids = (np.arange(ctx.window_rates.size) + 0.5) * WINDOW_SECONDS
        capacity = np.array([ctx.calibration.capacity("fp16", slowdown_at(ctx.incidents, "a", t)) for t in mids])
        policy = OraclePolicy(target, ctx.window_rates, capacity, ctx.startup_seconds)
        policy.need = np.minimum(policy.need, ctx.max_replicas)
        return policy
    if name == "forescale":
        from forescale_operator.engine import EngineParams
        from forescale_operator.spec import SpecError, parse_spec

        from ..spec_file import apply_sets
        from .forescale import ForescalePolicy, replay_spec

        body = replay_spec(ctx.slo_ms, ctx.quantile, ctx.max_replicas, ctx.max_replicas, **(ctx.spec_overrides or {}))
        try:
            spec = parse_spec(apply_sets(body, ctx.spec_sets))
        except SpecError as exc:
            raise SimError(f"the forescale policy's spec is invalid: {exc}") from None
        # The calibrated capacity is what an operator sets from a load test (the
        # forescale.io/capacity-rps annotation): the latency model's prior.
        # B's own load test where it serves a lighter model (forescale.io/capacity-rps-b).
        lighter = ctx.variant_b.model_factor != 1.0
        params = EngineParams(name="replay", fallback_capacity_rps=ctx.calibration.capacity("fp16"),
                              fallback_capacity_rps_b=(ctx.calibration.capacity(spec.b.precision, ctx.variant_b.model_factor)
                                                       if lighter else None),
                              default_startup_seconds=ctx.startup_seconds)
        forecaster = ctx.forecaster_factory(spec.forecast.step_seconds, spec.forecast.horizon_seconds) if ctx.forecaster_factory else None
        if forecaster is None:
            raise SimError("the forescale policy needs a forecaster")
        return ForescalePolicy(spec, forecaster, params, target, ctx.variant_b.agreement)
    raise SimError(f"unknown policy {name!r}; choose from {', '.join(POLICIES)}")
